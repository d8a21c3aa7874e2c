/**
 * `npm run soak`: mixed traffic against a local stack of its own for a while, then a
 * consistency check of everything it left (bench/soak-check.ts). Not part of `npm test`.
 *
 *   npm run soak -- [--minutes 10] [--concurrency 16]
 *   SOAK_MINUTES=2 CDP_FAULTS=conflict=0.2,throttle=0.1,stale=0.3 npm run soak
 *
 * It starts `local/start.ts` (in memory, CDP_EPHEMERAL=1, bench/soak-config.json) on ports
 * of its own (PORT=5300 DYNAMODB_PORT=9300 SQS_PORT=5350 SES_PORT=9305 unless set), passes
 * CDP_FAULTS through, drives person merges (new and existing people, the same emails from
 * concurrent requests, so merge-key races happen; a second data source merging by a unique
 * custom field), activities with and without keys (keys repeat), `async: true` requests,
 * organization merges and contacts add/remove, listings and transactional sends (some to
 * the SES simulator's bounce and complaint addresses). Then it waits for the queues to
 * drain and checks the tables directly. It exits 1 on any inconsistency, on any answer
 * other than 200/202/400 (400s come from records refused by a key race and are reported
 * with their messages), except 503s while CDP_FAULTS is set (the documented answer when a
 * record keeps losing to injected faults), and on any request that got no answer. An
 * accepted async request must end `done`, or `failed` as a 400 (its every record refused
 * when applied, having lost a key race after it was queued: documented behaviour).
 */
import { parseArgs } from 'node:util';
import {
  createDocumentClient,
  createDynamoDbClient,
  createSqsClient,
} from '../shared/adapters/aws-clients.js';
import { startStack, stopStack, waitForBanner } from '../test/integration/stack-process.js';
import { checkConsistency, pending, type CheckReport, type Sent } from './soak-check.js';
import {
  checkHooksAndAudience,
  FIRST_POINTS,
  HOOK_EVENTS,
  HookReceiver,
  pointsFilter,
  SECOND_POINTS,
  type HookReport,
} from './soak-hooks.js';

const INSTANCE = 'soak';
const WEB_KEY = 'soak-key-32-characters-or-more-web';
const MEMBERS_KEY = 'soak-key-32-characters-or-more-members';
const ASSET_ID = '50a450a450a450a450a450a4';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string' },
    concurrency: { type: 'string' },
    'drain-minutes': { type: 'string' },
  },
});
const minutes = Number(values.minutes ?? process.env.SOAK_MINUTES ?? 10);
const concurrency = Number(values.concurrency ?? process.env.SOAK_CONCURRENCY ?? 16);
const drainMinutes = Number(values['drain-minutes'] ?? process.env.SOAK_DRAIN_MINUTES ?? 5);
if (!(minutes > 0) || !Number.isInteger(concurrency) || concurrency < 1 || !(drainMinutes > 0)) {
  console.error('usage: npm run soak -- [--minutes N] [--concurrency N] [--drain-minutes N]');
  process.exit(2);
}
const faults = process.env.CDP_FAULTS?.trim() ?? '';

const ports = {
  port: Number(process.env.PORT ?? 5300),
  dynamodbPort: Number(process.env.DYNAMODB_PORT ?? 9300),
  sqsPort: Number(process.env.SQS_PORT ?? 5350),
  sesPort: Number(process.env.SES_PORT ?? 9305),
};
const base = `http://127.0.0.1:${ports.port}`;

// --- What happened ---------------------------------------------------------------------

interface KindStats {
  sent: number;
  statuses: Record<string, number>;
  latencies: number[];
}
const stats = new Map<string, KindStats>();
const errorSamples = new Map<string, number>();
const sent: Sent = { asyncRequestIds: new Set(), messageIds: new Map() };
const knownPeople: string[] = [];
const knownOrganizations: string[] = [];

function record(kind: string, status: string, ms: number) {
  const entry = stats.get(kind) ?? { sent: 0, statuses: {}, latencies: [] };
  entry.sent += 1;
  entry.statuses[status] = (entry.statuses[status] ?? 0) + 1;
  entry.latencies.push(ms);
  stats.set(kind, entry);
}

type Body = Record<string, unknown>;

/** One request; the answer's body, or undefined when it was not a 2xx. */
async function post(
  kind: string,
  path: string,
  body: Body,
  key = WEB_KEY,
  method = 'POST',
): Promise<Body | undefined> {
  const started = performance.now();
  let status: string;
  let parsed: Body | undefined;
  try {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(40_000),
    });
    status = String(response.status);
    const text = await response.text();
    parsed = JSON.parse(text) as Body;
    if (response.status >= 300) {
      const sample = `${kind} ${response.status}: ${String(parsed.error)}`.slice(0, 200);
      errorSamples.set(sample, (errorSamples.get(sample) ?? 0) + 1);
      if (response.status === 503) noteMaybeQueued(parsed);
      parsed = undefined;
    }
  } catch (error) {
    status = 'no answer';
    const sample = `${kind} no answer: ${error instanceof Error ? error.message : String(error)}`;
    errorSamples.set(sample, (errorSamples.get(sample) ?? 0) + 1);
    parsed = undefined;
  }
  record(kind, status, performance.now() - started);
  return parsed;
}

/** A 503 may name a request that was queued all the same: it must then be applied. */
function noteMaybeQueued(body: Body) {
  const details = Array.isArray(body.details) ? (body.details as Body[]) : [];
  for (const detail of details) {
    if (detail.status === 'may_be_queued' && typeof detail.request_id === 'string') {
      maybeQueued.add(detail.request_id);
    }
  }
}
const maybeQueued = new Set<string>();

// --- Traffic -----------------------------------------------------------------------------

const random = (n: number) => Math.floor(Math.random() * n);
const pick = <T>(items: readonly T[]): T | undefined => items[random(items.length)];
const run = Date.now().toString(36);
let fresh = 0;

/** An email of a small shared pool (so concurrent requests race for it), sometimes in capitals. */
function pooledEmail(): string {
  const email = `p${random(1500)}@soak.test`;
  return Math.random() < 0.2 ? email.toUpperCase() : email;
}
const newEmail = () => `n-${run}-${(fresh += 1)}@soak.test`;
const anyEmail = () => (Math.random() < 0.7 ? pooledEmail() : newEmail());

function personFields(): Body {
  const fields: Body = { 'str::email': anyEmail() };
  if (Math.random() < 0.5) fields['str::first'] = pick(['Ann', 'Bo', 'Cy', 'Di', 'Ed']);
  if (Math.random() < 0.5) fields['str::last'] = pick(['Smith', 'Lee', 'Ng', 'Park']);
  if (Math.random() < 0.3) fields['int:cm:points'] = random(1000);
  if (Math.random() < 0.2) fields['bol::p'] = Math.random() < 0.5;
  // Member numbers set through the email data source race with the members data source.
  if (Math.random() < 0.1) fields['str:cm:member-no'] = `M${random(400)}`;
  return fields;
}

function rememberPeople(answer: Body | undefined) {
  const people = Array.isArray(answer?.people) ? (answer.people as Body[]) : [];
  for (const person of people) {
    if (typeof person.person_id === 'string' && knownPeople.length < 5000) {
      knownPeople.push(person.person_id);
    }
  }
}

function rememberAsync(answer: Body | undefined) {
  if (typeof answer?.request_id === 'string') sent.asyncRequestIds.add(answer.request_id);
}

const kinds: { name: string; weight: number; run: () => Promise<void> }[] = [
  {
    name: 'person merge',
    weight: 20,
    run: async () => {
      const people = Array.from({ length: 1 + random(10) }, () => ({
        fields: personFields(),
        ...(Math.random() < 0.3 ? { tags: [pick(['vip', 'new', 'soak'])] } : {}),
      }));
      rememberPeople(await post('person merge', '/v1/person/merge', { people }));
    },
  },
  {
    name: 'person merge async',
    weight: 8,
    run: async () => {
      const people = Array.from({ length: 1 + random(10) }, () => ({ fields: personFields() }));
      rememberAsync(await post('person merge async', '/v1/person/merge', { people, async: true }));
    },
  },
  {
    name: 'member merge',
    weight: 6,
    run: async () => {
      const people = Array.from({ length: 1 + random(5) }, () => ({
        fields: {
          'str:cm:member-no': `M${random(400)}`,
          // A new person needs an email or an external ID besides the member number.
          ...(Math.random() < 0.5
            ? { 'str::email': newEmail() }
            : { 'str::ei': `ei-${random(400)}` }),
          'int:cm:points': random(100),
        },
      }));
      rememberPeople(await post('member merge', '/v1/person/merge', { people }, MEMBERS_KEY));
    },
  },
  {
    name: 'activities',
    weight: 15,
    run: async () => {
      const activities = Array.from({ length: 1 + random(5) }, () => {
        const keyed = Math.random() < 0.5;
        return Math.random() < 0.5
          ? {
              activity_id: 'act:cm:purchased',
              fields: { 'str::email': anyEmail() },
              attributes: {
                'str:cm:item': pick(['Teapot', 'Cup', 'Kettle']),
                'int:cm:price': random(100_000),
              },
              // Keys repeat across requests (and within one), so duplicates and races happen.
              ...(keyed ? { key: `order-${random(600)}` } : {}),
            }
          : {
              activity_id: 'act:cm:viewed',
              fields: { 'str::email': anyEmail() },
              attributes: { 'str:cm:page': `/p/${random(50)}` },
              ...(keyed ? { key: `view-${random(600)}` } : {}),
            };
      });
      const isAsync = Math.random() < 0.25;
      const answer = await post(
        isAsync ? 'activities async' : 'activities',
        '/v1/activities/create',
        {
          activities,
          ...(isAsync ? { async: true } : {}),
        },
      );
      if (isAsync) rememberAsync(answer);
    },
  },
  {
    name: 'organization merge',
    weight: 5,
    run: async () => {
      const organizations = Array.from({ length: 1 + random(3) }, () => {
        const n = random(60);
        return {
          fields: {
            'str:o:name': Math.random() < 0.2 ? `ORG ${n}` : `Org ${n}`,
            'int:oc:revenue': random(1_000_000),
          },
        };
      });
      const isAsync = Math.random() < 0.2;
      const answer = await post(
        isAsync ? 'organization merge async' : 'organization merge',
        '/v1/organizations/merge',
        { merge_by: ['str:o:name'], organizations, ...(isAsync ? { async: true } : {}) },
      );
      if (isAsync) rememberAsync(answer);
      const merged = Array.isArray(answer?.organizations) ? (answer.organizations as Body[]) : [];
      for (const organization of merged) {
        const id = organization.organization_id;
        if (typeof id === 'string' && !knownOrganizations.includes(id)) knownOrganizations.push(id);
      }
    },
  },
  {
    name: 'contacts add/remove',
    weight: 6,
    run: async () => {
      const organization = pick(knownOrganizations);
      if (!organization || knownPeople.length === 0) return;
      const ids = [
        ...new Set(Array.from({ length: 1 + random(15) }, () => pick(knownPeople) ?? '')),
      ];
      const remove = Math.random() < 0.35;
      await post(
        remove ? 'contacts remove' : 'contacts add',
        `/v1/organizations/contacts/${remove ? 'remove' : 'add'}`,
        { organization_id: organization, inclusion_ids: ids },
        WEB_KEY,
        'PUT',
      );
    },
  },
  {
    name: 'listings',
    weight: 10,
    run: async () => {
      const choice = random(4);
      if (choice === 0) {
        let cursor: unknown;
        for (let page = 0; page < 3; page += 1) {
          const answer = await post('person get (paged)', '/v1/person/get', {
            limit: 20,
            ...(cursor ? { cursor_id: cursor } : {}),
          });
          cursor = answer?.cursor_id;
          if (!cursor || answer?.has_more !== true) break;
        }
      } else if (choice === 1) {
        await post('person get q', '/v1/person/get', { q: `p${random(15)}`, limit: 10 });
      } else if (choice === 2) {
        await post('organizations get', '/v1/organizations/get', {
          limit: 20,
          ...(Math.random() < 0.5 ? { q: 'org 1' } : {}),
        });
      } else {
        const ids = Array.from({ length: 1 + random(20) }, () => pick(knownPeople)).filter(Boolean);
        if (ids.length)
          await post('person get-by-ids', '/v1/person/get-by-ids', { contact_ids: ids });
      }
    },
  },
  {
    name: 'transactional send',
    weight: 5,
    run: async () => {
      const to = Array.from({ length: 1 + random(4) }, () => {
        const roll = Math.random();
        if (roll < 0.1) return `bounce+${random(30)}@simulator.amazonses.com`;
        if (roll < 0.15) return `complaint+${random(30)}@simulator.amazonses.com`;
        return anyEmail();
      });
      const answer = await post('transactional send', '/v1/transactional/send', {
        asset: { asset_id: ASSET_ID },
        emails: to.map((email, n) => ({
          fields: { 'str::email': email },
          json_values: { order_id: `${run}-${n}` },
        })),
      });
      const emails = Array.isArray(answer?.emails) ? (answer.emails as Body[]) : [];
      emails.forEach((email, n) => {
        if (typeof email.message_id === 'string') {
          sent.messageIds.set(email.message_id, (to[n] ?? '').toLowerCase());
        }
      });
    },
  },
];
const totalWeight = kinds.reduce((total, kind) => total + kind.weight, 0);

function chooseKind() {
  let roll = Math.random() * totalWeight;
  for (const kind of kinds) {
    roll -= kind.weight;
    if (roll < 0) return kind;
  }
  return kinds[0];
}

async function traffic(until: number) {
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < until) await chooseKind()?.run();
    }),
  );
}

// --- Report ------------------------------------------------------------------------------

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function printTraffic(seconds: number) {
  const all = [...stats.values()].flatMap((entry) => entry.latencies).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  console.log(
    `\nRequests in ${seconds.toFixed(0)} s (${(all.length / seconds).toFixed(1)}/s), concurrency ${concurrency}, CDP_FAULTS=${faults || '(none)'}`,
  );
  console.log(
    `${'kind'.padEnd(26)} ${'sent'.padStart(6)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)}  statuses`,
  );
  for (const [kind, entry] of [...stats].sort(([a], [b]) => a.localeCompare(b))) {
    const sorted = [...entry.latencies].sort((a, b) => a - b);
    for (const [status, n] of Object.entries(entry.statuses))
      statuses[status] = (statuses[status] ?? 0) + n;
    console.log(
      `${kind.padEnd(26)} ${String(entry.sent).padStart(6)} ${percentile(sorted, 50).toFixed(0).padStart(8)} ${percentile(sorted, 95).toFixed(0).padStart(8)}  ${JSON.stringify(entry.statuses)}`,
    );
  }
  console.log(
    `${'all'.padEnd(26)} ${String(all.length).padStart(6)} ${percentile(all, 50).toFixed(0).padStart(8)} ${percentile(all, 95).toFixed(0).padStart(8)}  ${JSON.stringify(statuses)}`,
  );
  if (errorSamples.size) {
    console.log('\nAnswers other than 2xx, by message (5xx and unanswered first):');
    // The client's own errors (4xx) after everything else, however many: a rare 503 is news.
    const clientError = (sample: string) => (/^[\w ]+ 4\d\d: /.test(sample) ? 1 : 0);
    const ordered = [...errorSamples].sort(
      (a, b) => clientError(a[0]) - clientError(b[0]) || b[1] - a[1],
    );
    for (const [sample, n] of ordered.slice(0, 20)) {
      console.log(`  ${String(n).padStart(5)} × ${sample}`);
    }
  }
  return statuses;
}

function printCheck(report: CheckReport) {
  console.log('\nConsistency check (DynamoDB Local, read only):');
  console.log(
    `  people ${report.people} (subscribers ${report.subscribers}), person key claims ${report.claims}`,
  );
  console.log(
    `  organizations ${report.organizations}, organization claims ${report.organizationClaims}, memberships ${report.memberships}`,
  );
  console.log(`  activities ${report.activities}, activity keys ${report.activityKeys}`);
  console.log(
    `  async requests by status ${JSON.stringify(report.asyncRequests)} (accepted by this run: ${sent.asyncRequestIds.size}; failed as a 400 when applied, every record refused by a key race: ${report.asyncRefused})`,
  );
  console.log(
    `  emails by status ${JSON.stringify(report.emails)} (answered with a message ID: ${sent.messageIds.size}), suppressed addresses ${report.suppressed}`,
  );
  const dlq = Object.values(report.dlqDepths).reduce((a, b) => a + b, 0);
  const queued = Object.values(report.queueDepths).reduce((a, b) => a + b, 0);
  console.log(
    `  DLQ depth ${dlq} (${Object.keys(report.dlqDepths).length} dead-letter queues), messages left in queues ${queued}`,
  );
  if (report.problems.length === 0) console.log('  no inconsistency');
  else {
    console.log(`  ${report.problems.length} INCONSISTENCIES:`);
    for (const problem of report.problems.slice(0, 100)) console.log(`    - ${problem}`);
  }
}

function printHooks(report: HookReport) {
  console.log(
    `\nWebhook: ${report.eventsKept} events kept, ${report.received} received (${report.requests} requests, ${report.slowAnswers} answered after 3.5 s)`,
  );
  const { members, recounted, matching, subscribers } = report.audience;
  console.log(
    `Audience: ${members} members counted, ${recounted} recounted, ${matching} people matching its filter, ${subscribers} subscribers`,
  );
}

// --- Main --------------------------------------------------------------------------------

async function main(): Promise<number> {
  const awsEnv = {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${ports.dynamodbPort}`,
    AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${ports.sqsPort}`,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  const stack = startStack({
    ...process.env,
    PORT: String(ports.port),
    DYNAMODB_PORT: String(ports.dynamodbPort),
    SQS_PORT: String(ports.sqsPort),
    SES_PORT: String(ports.sesPort),
    CDP_EPHEMERAL: '1',
    CDP_SEED_FILE: 'bench/soak-config.json',
    CDP_FAULTS: faults,
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'ERROR',
    // Retries come back within seconds (the defaults wait up to minutes), and SES is not the
    // bottleneck: the drain at the end stays short. Each can be set from outside.
    INGEST_RETRY_BASE_SECONDS: process.env.INGEST_RETRY_BASE_SECONDS ?? '1',
    EMAIL_RETRY_BASE_SECONDS: process.env.EMAIL_RETRY_BASE_SECONDS ?? '1',
    SES_MAX_SEND_RATE: process.env.SES_MAX_SEND_RATE ?? '200',
    // An email whose SES call's outcome is unknown (an attempt cut by its function's time on
    // a loaded machine) waits out the confirmation window before it is settled: a minute
    // here, not the deployments' 10, so that the drain sees it end.
    EMAIL_CONFIRM_WINDOW_SECONDS: process.env.EMAIL_CONFIRM_WINDOW_SECONDS ?? '60',
    // SES events retried after 2 … 16 s: within that window, as the defaults are in theirs.
    EMAIL_EVENTS_RETRY_BASE_SECONDS: process.env.EMAIL_EVENTS_RETRY_BASE_SECONDS ?? '2',
  });
  console.log(`Starting the soak stack on ${base} (pid ${stack.child.pid ?? '?'})…`);
  try {
    await waitForBanner(stack.output, stack.child);
    Object.assign(process.env, awsEnv);
    // The check's own client: no injected faults, whatever CDP_FAULTS says.
    const db = createDocumentClient(createDynamoDbClient(), '');
    const sqs = createSqsClient();

    // Webhooks and audiences in the mix: an endpoint of the soak's own, and an audience
    // whose filter changes half-way (a rebuild while people change).
    const receiver = new HookReceiver();
    await receiver.start();
    const hook = await post('setup', '/v1/webhooks/create', {
      url: `http://127.0.0.1:${receiver.port}/soak`,
      events: HOOK_EVENTS,
    });
    const audience = await post('setup', '/v1/audiences/create', {
      name: `Points ${run}`,
      filter: pointsFilter(FIRST_POINTS),
    });
    if (!hook || !audience) throw new Error('the soak could not create its webhook and audience');
    const webhookId = String(hook.id);
    const audienceId = String(audience.id);

    console.log(`Driving traffic for ${minutes} min at concurrency ${concurrency}…`);
    const started = Date.now();
    const halfway = setTimeout(
      () => {
        void post(
          'setup',
          '/v1/audiences/update',
          {
            audience_id: audienceId,
            filter: pointsFilter(SECOND_POINTS),
          },
          WEB_KEY,
          'PUT',
        );
      },
      (minutes * 60_000) / 2,
    );
    await traffic(started + minutes * 60_000);
    clearTimeout(halfway);
    const statuses = printTraffic((Date.now() - started) / 1000);

    for (const id of maybeQueued) sent.asyncRequestIds.add(id);
    console.log(`\nWaiting for the queues to drain (at most ${drainMinutes} min)…`);
    const drainStart = Date.now();
    const built = async () => {
      const listed = await post('drain', '/v1/audiences/get', {});
      const entry = (listed as unknown as Body[] | undefined)?.find((a) => a.id === audienceId);
      return entry?.building === false ? entry : undefined;
    };
    const stillPending = async () => [
      ...(await pending(db, sqs, INSTANCE)),
      ...((await built()) ? [] : ['the audience is still building']),
    ];
    let left = await stillPending();
    while (left.length && Date.now() - drainStart < drainMinutes * 60_000) {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      left = await stillPending();
    }
    console.log(
      left.length
        ? `Not drained after ${drainMinutes} min: ${left.join('; ')}`
        : `Drained in ${((Date.now() - drainStart) / 1000).toFixed(0)} s`,
    );

    const report = await checkConsistency(db, sqs, INSTANCE, sent);
    printCheck(report);
    const entry = await built();
    const hooks = await checkHooksAndAudience(db, INSTANCE, webhookId, receiver, {
      id: audienceId,
      members: Number(entry?.members ?? -1),
      subscribers: Number(entry?.subscribers ?? -1),
      above: SECOND_POINTS,
    });
    await receiver.stop();
    printHooks(hooks);
    report.problems.push(...hooks.problems);

    const allowed = new Set(['200', '202', '400', ...(faults ? ['503'] : [])]);
    const unexpected = Object.entries(statuses).filter(([status]) => !allowed.has(status));
    if (unexpected.length) {
      console.log(`\nFAIL: unexpected answers ${JSON.stringify(Object.fromEntries(unexpected))}`);
    }
    if (unexpected.length || report.problems.length) {
      // What the functions logged as errors (POWERTOOLS_LOG_LEVEL, ERROR by default).
      const errors = stack
        .output()
        .split('\n')
        .filter((line) => line.includes('"level":"ERROR"'));
      console.log(`\nThe functions logged ${errors.length} errors; the last ones:`);
      for (const line of errors.slice(-20)) console.log(line);
    }
    if (report.problems.length) console.log('\nFAIL: the data is inconsistent');
    if (!unexpected.length && !report.problems.length) console.log('\nPASS');
    return unexpected.length || report.problems.length ? 1 : 0;
  } finally {
    const code = await stopStack(stack.child);
    // What CDP_FAULTS injected, as each region's process counted it when it stopped.
    for (const line of stack.output().split('\n')) {
      if (line.includes('DynamoDB faults injected in')) console.log(line.trim());
    }
    console.log(`Soak stack stopped (exit ${code ?? 'signal'}).`);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('soak:', error);
    process.exit(1);
  },
);
