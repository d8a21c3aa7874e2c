import type { Circus } from '@jest/types';
import { TestEnvironment } from 'jest-environment-node';

/**
 * The test environment of `npm run test:localstack`: Node's, where no test or hook has less
 * time than the suite's limit there (jest.config.js). The limits the test files give
 * themselves are chosen for the local emulators; against LocalStack every call passes its one
 * gateway and each wait for a worker may take WORKER_PATIENCE_MS (a hook given 90 s for three
 * such waits ran out in CI, 2026-11-29). jest-circus reads a test's or hook's limit just after
 * it dispatches these events, and awaits the environment's handler first.
 */
export default class LocalstackEnvironment extends TestEnvironment {
  handleTestEvent(event: Circus.Event, state: Circus.State): void {
    const floor = state.testTimeout;
    if (event.name === 'test_fn_start' && event.test.timeout) {
      event.test.timeout = Math.max(event.test.timeout, floor);
    }
    if (event.name === 'hook_start' && event.hook.timeout) {
      event.hook.timeout = Math.max(event.hook.timeout, floor);
    }
  }
}
