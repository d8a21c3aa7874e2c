import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SESv2Client } from '@aws-sdk/client-sesv2';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { createDocumentClient, createS3Client, createSqsClient } from '../adapters/aws-clients.js';
import { DynamoConfigStore } from '../adapters/config-store.js';
import { SqsEmailQueue } from '../adapters/email-queue.js';
import { DynamoEmailStore } from '../adapters/email-store.js';
import { coalesceReads } from '../adapters/read-coalescer.js';
import { SesSendConfirmations, watermarkAdvancer } from '../adapters/send-confirmations.js';
import { createSesClient, SesMailer, sendProbe } from '../adapters/ses-mailer.js';
import { EmailEventsWorkerEnv, EmailWorkerEnv, readEnv } from '../config/env.js';
import { deliverEmail, settleUndelivered } from '../domain/email/deliver.js';
import { applySesEvent, emailOfEvent, parseSesEvent } from '../domain/email/delivery-events.js';
import { unsubscriber } from '../domain/email/unsubscribe.js';
import { createPeopleWriters } from '../http/api-runtime.js';
import { logger } from '../lib/logger.js';
import { Pacer } from '../lib/pacer.js';
import { QUEUES } from '../resources.js';
import { WORKERS } from '../workers.js';
import { sqsWorker } from './sqs-worker.js';

const maxReceives = (queue: string) =>
  QUEUES.find((definition) => definition.name === queue)?.maxReceiveCount ?? 5;

/** The clients the email worker calls through; each made from the environment unless given. */
export interface EmailClients {
  db: DynamoDBDocumentClient;
  sqs: SQSClient;
  s3: S3Client;
  ses: SESv2Client;
}

/**
 * The email worker's composition root: each message is one email, sent at most once
 * (`deliverEmail`), the batch's emails at once, paced so that the worker's batches together
 * stay under the account's send rate. `clients` for clients of the caller's (figure 7 meters
 * the store's calls).
 */
export function createEmailWorker(
  env = readEnv(EmailWorkerEnv),
  clients: Partial<EmailClients> = {},
) {
  const {
    db: dbClient = createDocumentClient(),
    sqs = createSqsClient(),
    s3 = createS3Client(),
    ses = createSesClient(),
  } = clients;
  // The emails of a batch are delivered at once: their reads of the email records and of the
  // suppression list share calls (a batch of 10 makes one or two of each instead of ten).
  const db = coalesceReads(dbClient);
  const queue = new SqsEmailQueue(sqs, env.EMAIL_QUEUE_URL, s3, env.PAYLOADS_BUCKET);
  const store = new DynamoEmailStore(db, {
    emails: env.EMAILS_TABLE,
    activities: env.ACTIVITIES_TABLE,
  });
  const mailer = new SesMailer(ses, (key) => queue.attachment(key), env.SES_CONFIGURATION_SET);
  const batches = WORKERS.find((worker) => worker.queue === 'email')?.maxConcurrency ?? 1;
  const pacer = new Pacer(env.SES_MAX_SEND_RATE / batches);
  const maxReceiveCount = maxReceives('email');
  const confirmWindowMs = env.EMAIL_CONFIRM_WINDOW_SECONDS * 1000;
  const confirmations = new SesSendConfirmations(
    store,
    sqs,
    env.EMAIL_EVENTS_DLQ_URL,
    () => sendProbe(mailer, env.EMAIL_FALLBACK_DOMAIN),
    Math.min(60_000, confirmWindowMs),
  );
  const ports = {
    store,
    mailer,
    pace: () => pacer.wait(),
    confirmations,
    confirmWindowMs,
  };
  return sqsWorker({
    sqs,
    queueUrl: env.EMAIL_QUEUE_URL,
    maxReceiveCount,
    backoffBaseSeconds: env.EMAIL_RETRY_BASE_SECONDS,
    parallel: true,
    process: async (record: SQSRecord) => {
      const job = await queue.open(record.body);
      const outcome = await deliverEmail(job, ports);
      logger.info('Email delivered', { messageId: job.message_id, outcome });
    },
    onLastFailure: async (record: SQSRecord, error: unknown) => {
      const job = queue.envelope(record.body);
      return settleUndelivered(
        job,
        ports,
        `could not be sent after ${maxReceiveCount} attempts (${
          error instanceof Error ? error.message : 'error'
        })`,
      );
    },
  });
}

/**
 * The email-events worker's composition root: SES notifications (SNS → SQS) applied to
 * their emails, people and the suppression list.
 */
export function createEmailEventsWorker(env = readEnv(EmailEventsWorkerEnv)) {
  // The events of a batch are applied at once (those of one email in order): their reads of
  // the emails share calls.
  const db = coalesceReads(createDocumentClient());
  const sqs = createSqsClient();
  const store = new DynamoEmailStore(db, {
    emails: env.EMAILS_TABLE,
    activities: env.ACTIVITIES_TABLE,
  });
  const { people, location } = createPeopleWriters(db);
  const config = new DynamoConfigStore(db, env.CONFIG_TABLE);
  const watermark = watermarkAdvancer(store);
  return sqsWorker({
    sqs,
    queueUrl: env.EMAIL_EVENTS_QUEUE_URL,
    maxReceiveCount: maxReceives('email-events'),
    // 10, 20, 40, 80 s by default: all within the email worker's confirmation window.
    backoffBaseSeconds: env.EMAIL_EVENTS_RETRY_BASE_SECONDS,
    parallel: true,
    orderKey: (record) => emailOfEvent(record.body),
    process: async (record: SQSRecord) => {
      const outcome = await applySesEvent(parseSesEvent(record.body), {
        store,
        writeActivity: async (instanceId, activity) => {
          await store.recordActivity(instanceId, activity);
        },
        unsubscribe: unsubscriber(config, 'Email events', { store: people, location }),
        sendApplied: watermark,
      });
      logger.info('SES event applied', { messageId: record.messageId, outcome });
    },
    onLastFailure: () => Promise.resolve('dead-letter' as const),
  });
}
