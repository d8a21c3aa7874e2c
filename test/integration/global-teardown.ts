// Loaded by jest outside its ESM module mapper, hence the .ts extension.
import type { startStack } from './stack-process.ts';
import { stopStack } from './stack-process.ts';

export default async function globalTeardown(): Promise<void> {
  const stack = (globalThis as { cdpStack?: ReturnType<typeof startStack> }).cdpStack;
  if (stack) await stopStack(stack.child);
}
