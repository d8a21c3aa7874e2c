/**
 * A failure whose next attempt must not come before `retryAfterMs`: a queue worker waits at
 * least that long (instead of its shorter backoff) before the message comes back. The email
 * worker throws it while an attempt's lease holds the email, so that the redelivery that
 * settles the email cannot come, and run out of receives, before the lease has passed.
 */
export class RetryLaterError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RetryLaterError';
  }
}

/** The least wait a failure asks for before its retry (0 when it asks for none). */
export function retryAfterMs(error: unknown): number {
  return error instanceof RetryLaterError ? Math.max(0, error.retryAfterMs) : 0;
}
