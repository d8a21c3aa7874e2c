// Loaded by jest outside its ESM module mapper, hence the .ts extension.
import {
  FAULTS,
  SEED_FILE,
  TEST_STACKS,
  stackEnv,
  startStack,
  waitForBanner,
  waitForHealth,
  type TestStackKind,
} from './stack-process.ts';

/** What each stack adds to the environment `local/start.ts` runs in. */
const STACK_ENV: Record<TestStackKind, Record<string, string>> = {
  plain: { CDP_EPHEMERAL: '1' },
  faults: { CDP_EPHEMERAL: '1', CDP_FAULTS: FAULTS },
  // LocalStack keeps what earlier runs left: the stack empties its tables and queues first.
  localstack: { CDP_EPHEMERAL: '1', CDP_AWS_ENDPOINT: 'external' },
};

/** What the banner of each stack must show, so that a run proves its mode was on. */
const BANNER_PROOF: Record<TestStackKind, string | undefined> = {
  plain: undefined,
  faults: `DynamoDB faults injected (CDP_FAULTS): ${FAULTS}`,
  localstack: 'AWS services (CDP_AWS_ENDPOINT=external',
};

/**
 * Starts a local stack for all tests of a project: the plain one, the one whose DynamoDB
 * calls meet injected faults, or the one on LocalStack. The teardown stops them by their PIDs.
 */
export async function startTestStack(kind: TestStackKind): Promise<void> {
  const ports = TEST_STACKS[kind];
  const stack = startStack(stackEnv(ports, { CDP_SEED_FILE: SEED_FILE, ...STACK_ENV[kind] }));
  const stacks = ((globalThis as { cdpStacks?: (typeof stack)[] }).cdpStacks ??= []);
  stacks.push(stack);
  try {
    await waitForHealth(ports, stack.child);
    await waitForBanner(stack.output, stack.child);
    const proof = BANNER_PROOF[kind];
    if (proof !== undefined && !stack.output().includes(proof)) {
      throw new Error(`the stack for the ${kind} tests did not start in its mode (${proof})`);
    }
  } catch (error) {
    stack.child.kill('SIGTERM');
    throw new Error(`${(error as Error).message}\n${stack.output()}`);
  }
}

export default function globalSetup(): Promise<void> {
  return startTestStack('plain');
}
