// Loaded by jest outside its ESM module mapper, hence the .ts extension. (jest runs a
// global setup file once however many projects name it, hence a file per stack.)
import { startTestStack } from './global-setup.ts';

export default function globalSetup(): Promise<void> {
  return startTestStack('faults');
}
