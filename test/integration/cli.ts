import { spawn } from 'node:child_process';
import { TEST_STACK, externalAws } from './stack-process.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Environment without AWS settings, so that the admin CLI talks to a local stack. */
export function localOnlyEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('AWS_')) env[name] = value;
  }
  return { ...env, ...extra };
}

/**
 * The environment of an admin CLI run against the test stack: its emulators' ports, or the
 * external endpoint the stack runs on (`CDP_AWS_ENDPOINT=external`, the same variables).
 */
export function adminEnv(): NodeJS.ProcessEnv {
  if (externalAws()) return { ...process.env, CDP_AWS_ENDPOINT: 'external' };
  return localOnlyEnv({
    DYNAMODB_PORT: String(TEST_STACK.dynamodbPort),
    SQS_PORT: String(TEST_STACK.sqsPort),
  });
}

export function run(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 60_000,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} did not finish in time:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
