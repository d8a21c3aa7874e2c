import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { RegionData } from '../stacks/data-stack.js';

/**
 * What the email worker needs to prove that SES did not take an email whose send had an
 * unknown outcome (shared/domain/email/deliver.ts): the depth of the SES events'
 * dead-letter queue (an event waiting there forbids any proof), and the fallback sending
 * domain, the From of its probes to the mailbox simulator (sent with `ses:send`).
 * Its access is `queue:email-events:dead-letters`; kept apart from the function
 * construct so that it can move with it.
 */
export function grantDeliveryProof(fn: LambdaFunction, data: RegionData): void {
  const deadLetters = data.deadLetters['email-events'];
  fn.addToRolePolicy(
    new PolicyStatement({
      actions: ['sqs:GetQueueAttributes'],
      resources: [deadLetters.queueArn],
    }),
  );
  fn.addEnvironment('EMAIL_EVENTS_DLQ_URL', deadLetters.queueUrl);
  fn.addEnvironment('EMAIL_FALLBACK_DOMAIN', data.email.fallbackDomain);
}
