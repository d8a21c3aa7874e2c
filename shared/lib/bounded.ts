/**
 * Runs `work` over `items` with at most `concurrency` at once. When an item fails, no new
 * item starts, the items already running finish, and the first failure is returned with the
 * items never started. Nothing is left running when this resolves, so a caller that answers
 * after it knows that no write of the request happens after the answer.
 */
export async function runBounded<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<{ failure?: { error: unknown }; notStarted: T[] }> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (!failure && next < items.length) {
      const item = items[next] as T;
      next += 1;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  });
  await Promise.all(workers);
  return failure ? { failure, notStarted: items.slice(next) } : { notStarted: [] };
}

/** The items in slices of `size` (the last one shorter), for calls that take `size` at most. */
export function slicesOf<T>(items: readonly T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, i) =>
    items.slice(i * size, i * size + size),
  );
}
