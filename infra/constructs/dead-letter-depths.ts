import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { deadLetterUrlVariable, QUEUES } from '../../shared/resources.js';
import type { RegionData } from '../stacks/data-stack.js';

/**
 * `queues:dead-letters:depth`: how many messages wait in each of the region's dead-letter
 * queues and in the stream-failures queue (the console's overview, shown to platform admins):
 * `sqs:GetQueueAttributes` on those queues only (no receive, no delete), and their URLs.
 */
export function grantDeadLetterDepths(fn: LambdaFunction, data: RegionData): void {
  fn.addToRolePolicy(
    new PolicyStatement({
      actions: ['sqs:GetQueueAttributes'],
      resources: [
        ...QUEUES.map((queue) => data.deadLetters[queue.name].queueArn),
        data.streamFailures.queueArn,
      ],
    }),
  );
  for (const queue of QUEUES) {
    fn.addEnvironment(deadLetterUrlVariable(queue.name), data.deadLetters[queue.name].queueUrl);
  }
  fn.addEnvironment('STREAM_FAILURES_QUEUE_URL', data.streamFailures.queueUrl);
}
