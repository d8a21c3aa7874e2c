import { describe, expect, it } from '@jest/globals';
import type { Circus } from '@jest/types';
import LocalstackEnvironment from '../../integration/localstack-environment.js';

/** What jest-circus hands the environment when a test's function or a hook starts. */
function started(kind: 'test_fn_start' | 'hook_start', timeout: number | undefined) {
  const subject = { timeout };
  const event =
    kind === 'test_fn_start' ? { name: kind, test: subject } : { name: kind, hook: subject };
  LocalstackEnvironment.prototype.handleTestEvent.call(
    undefined,
    event as unknown as Circus.Event,
    { testTimeout: 600_000 } as Circus.State,
  );
  return subject.timeout;
}

describe('the LocalStack suite’s test environment', () => {
  it('raises a test’s or hook’s own shorter limit to the suite’s', () => {
    expect(started('test_fn_start', 90_000)).toBe(600_000);
    expect(started('hook_start', 60_000)).toBe(600_000);
  });

  it('keeps a longer limit, and leaves a test without one to the suite’s default', () => {
    expect(started('test_fn_start', 900_000)).toBe(900_000);
    expect(started('hook_start', 900_000)).toBe(900_000);
    expect(started('test_fn_start', undefined)).toBeUndefined();
  });
});
