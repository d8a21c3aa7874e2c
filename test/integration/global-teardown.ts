// Loaded by jest outside its ESM module mapper, hence the .ts extension.
import type { startStack } from './stack-process.ts';
import { mkdirSync, writeFileSync } from 'node:fs';
import { stopStack } from './stack-process.ts';

/**
 * Stops the stacks the global setups started. A stack with fault injection reports, per
 * region, how many faults its functions met: shown here so a run proves they happened.
 */
export default async function globalTeardown(): Promise<void> {
  const stacks = (globalThis as { cdpStacks?: ReturnType<typeof startStack>[] }).cdpStacks ?? [];
  const stopping = stacks.splice(0);
  await Promise.all(stopping.map((stack) => stopStack(stack.child)));
  for (const [index, stack] of stopping.entries()) {
    for (const line of stack.output().split('\n')) {
      if (line.includes('DynamoDB faults injected in the')) console.warn(line);
    }
    // What the stack printed (an unexpected 500's error among it), kept for a look after.
    mkdirSync('.data', { recursive: true });
    writeFileSync(`.data/test-stack-${process.pid}-${index}.log`, stack.output());
  }
}
