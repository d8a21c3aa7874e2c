// Loaded by jest outside its ESM module mapper, hence the .ts extension.
import { startTestStack } from './global-setup.ts';

/**
 * `npm run test:localstack`: the stack's APIs and pollers run here, every AWS service is at
 * `$AWS_ENDPOINT_URL` (LocalStack, default http://localhost:4566). The stack stops at once,
 * saying so, when nothing answers there.
 */
export default function globalSetup(): Promise<void> {
  return startTestStack('localstack');
}
