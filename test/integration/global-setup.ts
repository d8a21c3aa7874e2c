// Loaded by jest outside its ESM module mapper, hence the .ts extension.
import {
  FAULTS,
  FAULTS_STACK,
  PLAIN_STACK,
  SEED_FILE,
  stackEnv,
  startStack,
  waitForBanner,
  waitForHealth,
} from './stack-process.ts';

/**
 * Starts a local stack for all tests of a project: the plain one, or (`faults`) the one
 * whose DynamoDB calls meet injected faults. The teardown stops them by their PIDs.
 */
export async function startTestStack(faults: boolean): Promise<void> {
  const ports = faults ? FAULTS_STACK : PLAIN_STACK;
  const stack = startStack(
    stackEnv(ports, {
      CDP_EPHEMERAL: '1',
      CDP_SEED_FILE: SEED_FILE,
      ...(faults ? { CDP_FAULTS: FAULTS } : {}),
    }),
  );
  const stacks = ((globalThis as { cdpStacks?: (typeof stack)[] }).cdpStacks ??= []);
  stacks.push(stack);
  try {
    await waitForHealth(ports, stack.child);
    await waitForBanner(stack.output, stack.child);
    if (faults && !stack.output().includes(`DynamoDB faults injected (CDP_FAULTS): ${FAULTS}`)) {
      throw new Error('the stack for integration-faults did not turn fault injection on');
    }
  } catch (error) {
    stack.child.kill('SIGTERM');
    throw new Error(`${(error as Error).message}\n${stack.output()}`);
  }
}

export default function globalSetup(): Promise<void> {
  return startTestStack(false);
}
