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
    const lines = stack.output().split('\n');
    for (const line of lines) {
      if (line.includes('DynamoDB faults injected in the')) console.warn(line);
    }
    // A 500 that no test expected: its cause, in the run's own output (CI keeps only that).
    const unexpected = lines.filter((line) => line.includes('"Unexpected error"'));
    for (const line of unexpected.slice(0, 10)) console.warn(line.slice(0, 4000));
    if (unexpected.length > 10)
      console.warn(`… and ${unexpected.length - 10} more unexpected errors`);
    // What the stack printed (an unexpected 500's error among it), kept for a look after.
    mkdirSync('.data', { recursive: true });
    writeFileSync(`.data/test-stack-${process.pid}-${index}.log`, stack.output());
  }
}
