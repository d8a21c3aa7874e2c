import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * How long the work of one request (or one queue batch) may keep retrying. The HTTP stack
 * sets a deadline from the function's remaining time, minus the time needed to answer;
 * retries anywhere below (the DynamoDB client, the merge engine, memberships) stop waiting
 * once the next wait would pass it, so a request answers before API Gateway gives up and
 * no write of it runs after the answer. Work outside any request (the admin CLI, a
 * benchmark) gets `DEFAULT_BUDGET_MS` per retried call.
 */
const storage = new AsyncLocalStorage<{ deadline: number }>();

export const DEFAULT_BUDGET_MS = 20_000;

/** Runs `work` with a deadline (epoch milliseconds) that every retry below it honours. */
export function withDeadline<T>(deadline: number, work: () => Promise<T>): Promise<T> {
  return storage.run({ deadline }, work);
}

/** The current deadline; outside a budgeted run, `DEFAULT_BUDGET_MS` from `startedAt`. */
export function currentDeadline(startedAt = Date.now()): number {
  return storage.getStore()?.deadline ?? startedAt + DEFAULT_BUDGET_MS;
}

/**
 * The budget of the current run (one object per request or queue batch), or undefined
 * outside any: lets work started by one request be told apart from another's.
 */
export function currentBudget(): { readonly deadline: number } | undefined {
  return storage.getStore();
}

/**
 * How long past the deadline a store or queue call may still run: a call started just before
 * it (a move of the last people, the room given back after a failure) gets this long, and no
 * more, before it is abandoned, so that the answer (the HTTP stack keeps 2 s for it) is ours
 * and names what was applied, not the function's timeout.
 */
export const CALL_GRACE_MS = 1_000;
/** The least time a call is given, even past the deadline plus grace (a last clean-up call). */
const MIN_CALL_MS = 250;

/**
 * The time one call may take: `configuredMs` (the client's own limit), or less so that it ends
 * by the deadline plus `CALL_GRACE_MS`. Outside any budget, `configuredMs`.
 */
export function callTimeoutMs(configuredMs: number, now = Date.now()): number {
  const budget = storage.getStore();
  if (budget === undefined) return configuredMs;
  return Math.min(configuredMs, Math.max(budget.deadline + CALL_GRACE_MS - now, MIN_CALL_MS));
}

/** Whether waiting `ms` now still ends before the deadline. */
export function canWait(ms: number, deadline = currentDeadline()): boolean {
  return Date.now() + ms < deadline;
}

/**
 * Exponential backoff with full jitter (a random wait up to `base · 2^attempt`, capped), so
 * that many clients retrying at once spread out instead of colliding again.
 */
export function backoffMs(attempt: number, baseMs = 25, capMs = 1_000): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** attempt);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
