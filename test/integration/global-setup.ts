// Loaded by jest outside its ESM module mapper, hence the .ts extension.
import { SEED_FILE, TEST_STACK, stackEnv, startStack, waitForHealth } from './stack-process.ts';

/** Starts the local stack once for all integration tests; the teardown stops it by its PID. */
export default async function globalSetup(): Promise<void> {
  const stack = startStack(stackEnv(TEST_STACK, { CDP_EPHEMERAL: '1', CDP_SEED_FILE: SEED_FILE }));
  (globalThis as { cdpStack?: typeof stack }).cdpStack = stack;
  try {
    await waitForHealth(TEST_STACK, stack.child);
  } catch (error) {
    stack.child.kill('SIGTERM');
    throw new Error(`${(error as Error).message}\n${stack.output()}`);
  }
}
