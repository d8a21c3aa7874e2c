import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  createDocumentClient,
  NO_FAULTS,
  createDynamoDbClient,
  createSqsClient,
} from '../shared/adapters/aws-clients.js';
import { KMSClient } from '@aws-sdk/client-kms';
import { DynamoConfigStore } from '../shared/adapters/config-store.js';
import { DynamoWebhookStore } from '../shared/adapters/webhook-store.js';
import { bindWebhookSecrets } from '../shared/domain/webhooks/webhook.js';
import {
  KmsKeyWrapper,
  LocalKeyWrapper,
  signingKeyAlias,
  WEBHOOK_SECRET_PURPOSE,
} from '../shared/adapters/key-wrappers.js';
import type { KeyWrapper } from '../shared/domain/signing-keys.js';
import { DynamoPeopleStore } from '../shared/adapters/people-store.js';
import { repairCounts } from '../shared/adapters/counter-repair.js';
import { DynamoFieldIndex, rebuildFieldIndex } from '../shared/adapters/field-index-store.js';
import { FieldCatalog } from '../shared/domain/fields/field-catalog.js';
import { TAGS_FIELD_ID } from '../shared/domain/people/system-fields.js';
import { DynamoRequestStore } from '../shared/adapters/request-store.js';
import { GetQueueUrlCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { configAudienceApplier, recheckAllJob } from '../shared/worker/audience-runtime.js';
import { listDeadLetters, redriveDeadLetters } from './dead-letters.js';
import {
  listKeys,
  listSigningKeys,
  retireSigningKey,
  revokeKey,
  rotateSigningKey,
} from './keys-admin.js';
import { LINK_TOKEN_DAYS } from '../shared/domain/email/link-tokens.js';
import { DynamoEmailStore } from '../shared/adapters/email-store.js';
import { billableLookups } from '../shared/domain/location.js';
import { hashApiKey, mintApiKey } from '../shared/domain/api-keys.js';
import { applyConfiguration } from '../shared/domain/configuration.js';
import { CdpError } from '../shared/domain/errors.js';
import { parseConfigurationFile } from '../shared/domain/instance-config.js';
import { isRegion, REGIONS, type Region } from '../shared/domain/regions.js';
import { awsRegionOf } from '../shared/deployment.js';
import { QUEUES, queueName, tableName, type QueueName } from '../shared/resources.js';
import { localAwsEnv, readStackSettings } from './settings.js';

/**
 * The admin CLI (`npm run admin -- <command>`):
 *   apply <file> [--region default|au|eu] [--settle <seconds>]
 *   key create --instance <id> --data-source <name> [--region default|au|eu]
 *   usage --instance <id> [--month YYYY-MM] [--region default|au|eu]
 *   repair counts [--instance <id>] [--region default|au|eu]
 *   repair indexes [--instance <id>] [--region default|au|eu]
 *   repair instances [--region default|au|eu]
 *   key list | revoke, signing-key list | rotate | retire (local/keys-admin.ts)
 *   dlq list [--queue ingest] [--region default|au|eu]
 *   dlq redrive [--queue ingest] [--message <message, request or email ID>] [--region default|au|eu]
 * With no AWS endpoint variables and no AWS credentials in the environment it talks to the
 * local stack (`$DYNAMODB_PORT`); otherwise to the deployment they name. With
 * `CDP_AWS_ENDPOINT=external` it talks to the local stack run on an external endpoint
 * (LocalStack: every region in one AWS region, as `npm start` made it there).
 */
const USAGE = `usage:
  npm run admin -- apply <file> [--region default|au|eu] [--settle <seconds>]
  npm run admin -- key create --instance <id> --data-source <name> [--region default|au|eu]
  npm run admin -- key list --instance <id> [--region default|au|eu]
  npm run admin -- key revoke --instance <id> (--key <key> | --key-hash <hash>) [--region …]
  npm run admin -- signing-key list | rotate [--overlap-days 400] | retire --kid <id> [--region …]
  npm run admin -- usage --instance <id> [--month YYYY-MM] [--region default|au|eu]
  npm run admin -- repair counts [--instance <id>] [--region default|au|eu]
  npm run admin -- repair indexes [--instance <id>] [--region default|au|eu]
  npm run admin -- repair instances [--region default|au|eu]
  npm run admin -- dlq list [--queue ingest] [--region default|au|eu]
  npm run admin -- dlq redrive [--queue ingest] [--message <id>] [--region default|au|eu]
  npm run admin -- audiences recheck [--region default|au|eu]`;

class UsageError extends Error {}

function targetsAws(env: NodeJS.ProcessEnv): boolean {
  if (env.CDP_AWS_ENDPOINT) return false;
  return [
    'AWS_ENDPOINT_URL',
    'AWS_ENDPOINT_URL_DYNAMODB',
    'AWS_PROFILE',
    'AWS_ACCESS_KEY_ID',
    'AWS_WEB_IDENTITY_TOKEN_FILE',
    'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  ].some((name) => Boolean(env[name]));
}

/** Decided once: reaching the local stack sets endpoint variables in this process's env. */
const TARGETS_AWS = targetsAws(process.env);

/**
 * An operator's command has no gateway timeout over it: each call may wait 30 s for a loaded
 * store rather than end as "did not answer in time" (a write's outcome then unknown).
 */
const ADMIN_ANSWER_MS = 30_000;

function documents(region: Region) {
  if (targetsAws(process.env)) {
    return createDocumentClient(
      createDynamoDbClient({
        region: process.env.AWS_REGION ?? awsRegionOf(region),
        answerMs: ADMIN_ANSWER_MS,
      }),
      NO_FAULTS,
    );
  }
  Object.assign(process.env, localAwsEnv(readStackSettings()));
  // Administration never meets the faults CDP_FAULTS injects into the API and the workers.
  return createDocumentClient(createDynamoDbClient({ answerMs: ADMIN_ANSWER_MS }), NO_FAULTS);
}

/** An SQS client for the deployment (the local stand-in without AWS settings). */
function queues(region: Region): SQSClient {
  if (targetsAws(process.env)) process.env.AWS_REGION ??= awsRegionOf(region);
  else Object.assign(process.env, localAwsEnv(readStackSettings()));
  return createSqsClient();
}

function queueOption(value: string | undefined): QueueName {
  const name = value ?? 'ingest';
  if (!QUEUES.some((queue) => queue.name === name)) {
    throw new UsageError(`--queue must be one of ${QUEUES.map((q) => q.name).join(', ')}`);
  }
  return name as QueueName;
}

async function deadLetters(
  action: string | undefined,
  queue: QueueName,
  region: Region,
  only: string | undefined,
): Promise<void> {
  const sqs = queues(region);
  if (action === 'list') {
    const db = documents(region);
    const letters = await listDeadLetters(
      sqs,
      {
        requests: new DynamoRequestStore(db, tableName(region, 'requests')),
        emails: new DynamoEmailStore(db, { emails: tableName(region, 'emails') }),
      },
      region,
      queue,
    );
    console.log(`Dead letters of ${queueName(region, queue)}: ${letters.length}`);
    for (const letter of letters) {
      const what = letter.emailId
        ? `email ${letter.emailId} (instance ${letter.instance ?? '?'}): ${letter.state ?? '?'}`
        : `request ${letter.requestId ?? '?'} (${letter.kind ?? '?'}, instance ${letter.instance ?? '?'}, accepted ${letter.acceptedAt ?? '?'})`;
      console.log(
        `  ${letter.messageId}  ${what}, received ${letter.receives} times${letter.reason ? `: ${letter.reason}` : ''}`,
      );
    }
    return;
  }
  if (action === 'redrive') {
    const moved = await redriveDeadLetters(sqs, region, queue, only);
    console.log(`Moved back to ${queueName(region, queue)}: ${moved.length}`);
    for (const letter of moved) {
      console.log(
        `  ${letter.messageId}  ${letter.emailId ? `email ${letter.emailId}` : `request ${letter.requestId ?? '?'}`}`,
      );
    }
    return;
  }
  throw new UsageError('dlq needs list or redrive');
}

/**
 * Queues the daily re-evaluation of audiences now (the schedule's message): the people whose
 * memberships can change with time alone are evaluated again.
 */
async function audienceJobsUrl(region: Region): Promise<string> {
  const { QueueUrl } = await queues(region).send(
    new GetQueueUrlCommand({ QueueName: queueName(region, 'audience-jobs') }),
  );
  if (!QueueUrl) throw new Error(`The ${region} region has no audience-jobs queue`);
  return QueueUrl;
}

async function recheckAudiences(region: Region): Promise<void> {
  const sqs = queues(region);
  const QueueUrl = await audienceJobsUrl(region);
  await sqs.send(
    new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify(recheckAllJob()) }),
  );
  console.log(`The re-evaluation of the ${region} region's audiences is queued.`);
}

/** The deployment's key wrapper: the region's KMS key on AWS, the local one otherwise. */
function keyWrapper(region: Region, purpose?: string): KeyWrapper {
  if (!TARGETS_AWS) return new LocalKeyWrapper();
  return new KmsKeyWrapper(
    new KMSClient({ region: process.env.AWS_REGION ?? awsRegionOf(region) }),
    signingKeyAlias(region),
    purpose,
  );
}

function configStore(region: Region): DynamoConfigStore {
  return new DynamoConfigStore(documents(region), tableName(region, 'config'), keyWrapper(region));
}

function peopleStore(region: Region): DynamoPeopleStore {
  return new DynamoPeopleStore(documents(region), {
    people: tableName(region, 'people'),
    activities: tableName(region, 'activities'),
    organizations: tableName(region, 'organizations'),
  });
}

/** Address lookups of an instance in a month: the count, and what is billed (next 1000). */
async function usage(instanceId: string, month: string | undefined, region: Region) {
  const at = month ? new Date(`${month}-01T00:00:00Z`) : new Date();
  if (Number.isNaN(at.getTime()) || (month !== undefined && !/^\d{4}-\d{2}$/.test(month))) {
    throw new UsageError('--month must be YYYY-MM');
  }
  const count = await peopleStore(region).geocodingLookups(instanceId, at);
  console.log(`Address lookups of "${instanceId}" in ${at.toISOString().slice(0, 7)}: ${count}`);
  console.log(`Billable (rounded up to the next 1000): ${billableLookups(count)}`);
}

function regionOption(value: string | undefined): Region {
  if (value === undefined) return 'default';
  if (!isRegion(value)) throw new UsageError(`--region must be one of ${REGIONS.join(', ')}`);
  return value;
}

/**
 * `--settle`: how long running functions may keep the previous configuration cached (a
 * minute); fields made unique are claimed again after it. 0 when nothing serves the region.
 */
function settleOption(value: string | undefined): number {
  if (value === undefined) return 60_000;
  const seconds = Number(value);
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > 3600) {
    throw new UsageError('--settle must be a whole number of seconds (0-3600)');
  }
  return seconds * 1000;
}

async function apply(file: string | undefined, region: Region, settleMs: number): Promise<void> {
  if (!file) throw new UsageError('apply needs the path of a configuration file');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new UsageError(`${file} cannot be read as JSON: ${(error as Error).message}`);
  }
  const configuration = parseConfigurationFile(raw);
  const withAudiences = configuration.instances.some(
    (instance) => instance.region === region && instance.audiences.length > 0,
  );
  const summary = await applyConfiguration(configuration, region, configStore(region), {
    keyClaims: peopleStore(region),
    settleMs,
    ...(withAudiences
      ? {
          audiences: configAudienceApplier(
            documents(region),
            queues(region),
            { config: tableName(region, 'config'), audiences: tableName(region, 'audiences') },
            await audienceJobsUrl(region),
          ),
        }
      : {}),
  });
  console.log(
    `Applied to region ${region}: ${summary.instances.length} instance(s)` +
      `${summary.instances.length ? ` (${summary.instances.join(', ')})` : ''}, ` +
      `${summary.foreignKeys} key(s) of other regions recorded for redirection.`,
  );
  for (const report of summary.claimed) {
    console.log(
      `${report.instance}: ${report.field} is now unique: ${report.claimed} value(s) claimed` +
        (report.shared.length > 0
          ? `; ${report.shared.length} value(s) held by several people:`
          : '.'),
    );
    for (const { value, people } of report.shared) {
      console.log(`  "${value}": ${people.join(', ')} (the first keeps the claim)`);
    }
  }
  for (const { instance, field, claims } of summary.released) {
    console.log(`${instance}: ${field} is no longer unique: ${claims} claim(s) given back.`);
  }
  // Webhook secrets wrapped before they were bound to their webhook: wrapped again, bound.
  const webhooks = new DynamoWebhookStore(documents(region), tableName(region, 'config'));
  const wrapper = keyWrapper(region, WEBHOOK_SECRET_PURPOSE);
  for (const instanceId of summary.instances) {
    const bound = await bindWebhookSecrets(instanceId, webhooks, wrapper);
    if (bound > 0) console.log(`${instanceId}: ${bound} webhook secret(s) bound to their webhook.`);
  }
}

async function repair(instanceId: string | undefined, region: Region): Promise<void> {
  const ids = instanceId ? [instanceId] : await configStore(region).listInstanceIds();
  let drift = 0;
  for (const id of ids) {
    const report = await repairCounts(
      documents(region),
      {
        people: tableName(region, 'people'),
        organizations: tableName(region, 'organizations'),
      },
      id,
    );
    drift += report.fixed.length;
    console.log(`${id}: ${report.people} people, ${report.organizations} organizations`);
    for (const fix of report.fixed) {
      console.log(`  fixed ${fix.counter}: was ${fix.was}, counted ${fix.counted}`);
    }
  }
  console.log(`Counters corrected: ${drift}.`);
}

/**
 * Rebuilds the field index of an instance (or every instance of the region): every person's
 * entries put, then the entries no person holds removed (field-index-store.ts).
 */
async function repairIndexes(instanceId: string | undefined, region: Region): Promise<void> {
  const store = configStore(region);
  const ids = instanceId ? [instanceId] : await store.listInstanceIds();
  const people = peopleStore(region);
  const index = new DynamoFieldIndex(documents(region), tableName(region, 'indexes'));
  for (const id of ids) {
    const instance = await store.getInstance(id);
    if (!instance) continue;
    const catalog = FieldCatalog.forPerson(instance.person_fields);
    const fields = [
      ...[...catalog.fields].filter((field) => field.stored).map((field) => field.id),
      TAGS_FIELD_ID,
    ];
    const done = await rebuildFieldIndex(people, index, id, [...new Set(fields)]);
    console.log(
      `${id}: ${done.people} people, ${done.entries} entries put, ${done.removed} removed.`,
    );
  }
}

/**
 * Puts in the region's list of instances those written before it existed (once after the
 * upgrade that brought it; idempotent).
 */
async function repairInstances(region: Region): Promise<void> {
  const added = await configStore(region).repairInstanceList();
  console.log(
    added.length === 0
      ? 'Every instance is in the list of instances.'
      : `Added to the list of instances: ${added.join(', ')}.`,
  );
}

async function createKey(instanceId: string, dataSource: string, region: Region): Promise<void> {
  const store = configStore(region);
  const instance = await store.getInstance(instanceId);
  if (!instance || instance.region !== region) {
    throw new UsageError(
      `No instance "${instanceId}" in region ${region} (apply its configuration first)`,
    );
  }
  if (!instance.data_sources.some((source) => source.name === dataSource)) {
    const names = instance.data_sources.map((source) => `"${source.name}"`).join(', ');
    throw new UsageError(
      `Instance "${instanceId}" has no data source "${dataSource}" (it has ${names || 'none'})`,
    );
  }
  const key = mintApiKey(region);
  await store.addMintedKey({
    key_hash: hashApiKey(key),
    instance_id: instanceId,
    data_source: dataSource,
    home_region: region,
  });
  console.log(`New API key for instance "${instanceId}", data source "${dataSource}" (${region}).`);
  console.log('It is shown only this once; only its hash is stored:');
  console.log(key);
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      region: { type: 'string' },
      instance: { type: 'string' },
      'data-source': { type: 'string' },
      month: { type: 'string' },
      settle: { type: 'string' },
      queue: { type: 'string' },
      message: { type: 'string' },
      key: { type: 'string' },
      'key-hash': { type: 'string' },
      'overlap-days': { type: 'string' },
      kid: { type: 'string' },
    },
  });
  const region = regionOption(values.region);
  const [command, ...rest] = positionals;
  if (command === 'apply') return apply(rest[0], region, settleOption(values.settle));
  if (command === 'repair' && rest[0] === 'counts') return repair(values.instance, region);
  if (command === 'repair' && rest[0] === 'indexes') return repairIndexes(values.instance, region);
  if (command === 'repair' && rest[0] === 'instances') return repairInstances(region);
  if (command === 'dlq') {
    return deadLetters(rest[0], queueOption(values.queue), region, values.message);
  }
  if (command === 'key' && rest[0] === 'create') {
    if (!values.instance || !values['data-source']) {
      throw new UsageError('key create needs --instance <id> and --data-source <name>');
    }
    return createKey(values.instance, values['data-source'], region);
  }
  if (command === 'audiences' && rest[0] === 'recheck') return recheckAudiences(region);
  if (command === 'key' && (rest[0] === 'list' || rest[0] === 'revoke')) {
    if (!values.instance) throw new UsageError(`key ${rest[0]} needs --instance <id>`);
    if (rest[0] === 'list') return listKeys(configStore(region), values.instance, console.log);
    return revokeKey(
      configStore(region),
      values.instance,
      {
        ...(values.key !== undefined ? { key: values.key } : {}),
        ...(values['key-hash'] !== undefined ? { hash: values['key-hash'] } : {}),
      },
      console.log,
    );
  }
  if (command === 'signing-key') {
    const store = configStore(region);
    if (rest[0] === 'list') return listSigningKeys(store, console.log);
    if (rest[0] === 'rotate') {
      const days = Number(values['overlap-days'] ?? LINK_TOKEN_DAYS + 35);
      if (!Number.isInteger(days) || days < 0 || days > 3650) {
        throw new UsageError('--overlap-days must be a whole number of days (0-3650)');
      }
      return rotateSigningKey(store, keyWrapper(region), days, console.log);
    }
    if (rest[0] === 'retire') {
      if (!values.kid) throw new UsageError('signing-key retire needs --kid <key ID>');
      return retireSigningKey(store, values.kid, console.log);
    }
    throw new UsageError('signing-key needs list, rotate or retire');
  }
  if (command === 'usage') {
    if (!values.instance) throw new UsageError('usage needs --instance <id>');
    return usage(values.instance, values.month, region);
  }
  throw new UsageError(command ? `unknown command "${positionals.join(' ')}"` : 'no command given');
}

main().catch((error: unknown) => {
  if (error instanceof UsageError) console.error(`admin: ${error.message}\n${USAGE}`);
  else if (error instanceof CdpError) console.error(`admin: ${error.message}`);
  else if (error instanceof Error && /ECONNREFUSED/.test(`${error.name} ${error.message}`)) {
    console.error('admin: cannot reach DynamoDB: is the local stack running (npm start)?');
  } else console.error('admin:', error);
  process.exitCode = 1;
});
