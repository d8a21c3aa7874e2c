import { EDGE_MAX_BODY_BYTES } from './edge.js';

/**
 * The routes table: the single source of truth for the HTTP API. The CDK stack builds one
 * API Gateway route and Lambda function per entry, and the local server serves the same
 * handler modules from it.
 */
export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
/** What a function may touch; `:read` variants grant reads only. */
export type Access =
  | 'config:read'
  | 'config:write'
  | 'people'
  | 'people:read'
  | 'organizations'
  | 'organizations:read'
  | 'activities'
  | 'activities:read'
  /** Idempotency records (every POST/PUT under /v1) and asynchronous requests. */
  | 'requests'
  /** The field index (people's values, tags, organizations): kept by the audience worker. */
  | 'indexes'
  | 'indexes:read'
  /** Storing (and taking back) the claim-check payloads of large asynchronous requests. */
  | 'payloads:put'
  /** Reading claim-check payloads (the ingest worker). */
  | 'payloads:get'
  /**
   * Deleting the payloads (`ingest/…` and `email/…`) that hold an erased person's data:
   * person delete and the ingest worker (its background deletes).
   */
  | 'payloads:erase'
  /** Sending to the ingest queue (the API). */
  | 'queue:ingest'
  /** Putting a failed message of the ingest queue back later (its worker's backoff). */
  | 'queue:ingest:retry'
  /** Location lookups: the IP database in the bundle and the region's place index. */
  | 'geo'
  /** Transactional emails (their states and link destinations) and suppressed addresses. */
  | 'emails'
  | 'emails:read'
  /** Storing rendered emails and attachments (`email/…` in the payloads bucket): the API. */
  | 'email-payloads:put'
  /** Reading them: the email worker. */
  | 'email-payloads:get'
  /** Sending to the email queue (the API). */
  | 'queue:email'
  /** Putting a failed message of the email queue back later (its worker's backoff). */
  | 'queue:email:retry'
  /** The same for the SES events queue. */
  | 'queue:email-events:retry'
  /**
   * The depth of the SES events' dead-letter queue, and the fallback domain: what proves
   * that SES did not take an email before it is sent again (the email worker).
   */
  | 'queue:email-events:dead-letters'
  /**
   * The depth of every dead-letter queue of the region and of the stream-failures queue
   * (`sqs:GetQueueAttributes` on them, nothing else): the console's overview, which shows
   * them to platform admins.
   */
  | 'queues:dead-letters:depth'
  /** Sending raw email through SES with the region's configuration set. */
  | 'ses:send'
  /** Audience memberships and counters (docs/audiences.md). */
  | 'audiences'
  | 'audiences:read'
  /** Queueing audience builds and deletions (the API, the audience workers). */
  | 'queue:audience-jobs'
  /** Putting a failed message of the audience-jobs queue back later (its worker's backoff). */
  | 'queue:audience-jobs:retry'
  /**
   * Unwrapping the signing keyring (paging cursors, email links): `kms:Decrypt` with the
   * region's signing key. Only functions that sign or verify have it.
   */
  | 'signing'
  /**
   * Wrapping webhook secrets (`kms:Encrypt` and `kms:Decrypt` with the region's signing key,
   * in the webhook-secret context only): the endpoints that make secrets.
   */
  | 'webhook-secrets:wrap'
  /** Unwrapping them (`kms:Decrypt`, the same context): the delivery worker. */
  | 'webhook-secrets:unwrap'
  /** Queueing webhook deliveries (the fan-out worker). */
  | 'queue:webhooks'
  /** Putting a failed delivery back until its next attempt (the delivery worker). */
  | 'queue:webhooks:retry'
  /**
   * Reading erased people's marks (the delivery workers): `dynamodb:GetItem` on the requests
   * table, only in mark partitions (`*#ERASED#*`).
   */
  | 'erasures:check'
  /** Moving deliveries to the slow endpoints' queue (the delivery worker). */
  | 'queue:webhooks-slow'
  | 'queue:webhooks-slow:retry'
  /**
   * Recording an endpoint's failures, pausing and disabling it (the delivery worker):
   * `dynamodb:UpdateItem` on the config table, only in webhook partitions (`INST#*#WH`).
   */
  | 'webhooks:health'
  /**
   * Webhook events kept for replay, delivery attempts and replay jobs (the deliveries table):
   * reads and writes (the delivery and replay workers, replays), or reads only.
   */
  | 'deliveries'
  | 'deliveries:read'
  /**
   * Keeping the events queued for webhooks (the fan-out workers): `dynamodb:PutItem` and
   * `BatchWriteItem` on the deliveries table, and `s3:PutObject` under `webhooks/` of the
   * payloads bucket for an event too large for its item and a message (claim check).
   */
  | 'webhook-events:keep'
  /**
   * Erasing a person's kept events (the people table's fan-out, on the person's removal):
   * queries and deletes in the deliveries table, deletes under `webhooks/` in the bucket.
   */
  | 'webhook-events:forget'
  /** Reading those large events back (`s3:GetObject` under `webhooks/`): the delivery worker. */
  | 'webhook-payloads:get'
  /** Queueing a replay's slices of work (the replay endpoint, the replay worker). */
  | 'queue:webhook-replays'
  /** Putting a failed slice of a replay back later (the replay worker's backoff). */
  | 'queue:webhook-replays:retry';

export interface RouteDefinition {
  readonly method: Method;
  readonly path: string;
  /** Folder under `functions/` holding `handler.ts`. */
  readonly function: string;
  /** Whether the route requires an API key. */
  readonly auth: boolean;
  /**
   * A route of the console's API (`/console/v1/…`): the signed-in user's ID token
   * (`Authorization: Bearer`) instead of a key, which it never accepts (docs/console.md).
   */
  readonly console?: true;
  /** Bodies above this are refused with 413 before they are parsed. */
  readonly maxBodyBytes: number;
  readonly memoryMb: number;
  readonly timeoutSeconds: number;
  /** What the function reads and writes; the stack grants exactly this. */
  readonly access: readonly Access[];
  /**
   * Files of npm packages the function reads at run time (`<package>/<file>`), copied into its
   * bundle under `node_modules/` so that they resolve there as they do locally.
   */
  readonly packageFiles?: readonly string[];
  /**
   * Reserved concurrency: the most instances the route's function runs at once, so that a
   * flood of slow requests cannot take the account's concurrency from every other function
   * (docs/operations.md, "Concurrency"). Routes that can run for seconds have one.
   */
  readonly reservedConcurrency?: number;
}

const MB = 1024 * 1024;
/** The body limit of endpoints for which the spec sets none. */
export const DEFAULT_MAX_BODY_BYTES = 1 * MB;

const api = (
  method: Method,
  path: string,
  fn: string,
  options: Partial<RouteDefinition> = {},
): RouteDefinition => {
  const access = options.access ?? ['config:read'];
  return {
    method,
    path,
    function: fn,
    auth: true,
    maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
    memoryMb: 1024,
    timeoutSeconds: 29,
    ...options,
    // Every POST/PUT/DELETE under /v1 honours Idempotency-Key (its records live in `requests`).
    access: method !== 'GET' && path.startsWith('/v1/') ? [...access, 'requests'] : access,
  };
};

/**
 * What writing people takes (person merge, activities): people and their activities,
 * organizations to show, location lookups, and queueing asynchronous requests.
 */
const PEOPLE_WRITER: readonly Access[] = [
  'config:read',
  'people',
  'activities',
  'organizations:read',
  'geo',
  'queue:ingest',
  'payloads:put',
];

/** Organizations (and the accounts names, the same functions): merging, which may queue. */
const ORGANIZATIONS_MERGE: Partial<RouteDefinition> = {
  maxBodyBytes: 2 * MB,
  access: ['config:read', 'organizations', 'queue:ingest', 'payloads:put'],
  reservedConcurrency: 50,
};
/** Reading organizations (listings, by ID). */
const ORGANIZATIONS_READ: Partial<RouteDefinition> = {
  access: ['config:read', 'organizations:read'],
};
/** Organization listings: their cursors are signed. */
const ORGANIZATION_LISTING: Partial<RouteDefinition> = {
  access: ['config:read', 'organizations:read', 'signing'],
};
/** Linking people to organizations, or unlinking them. */
const MEMBERSHIPS: Partial<RouteDefinition> = {
  access: ['config:read', 'people', 'organizations'],
};

/** Archiving and restoring people: both tables of a membership, and background requests. */
const PEOPLE_LIFECYCLE: readonly Access[] = [
  'config:read',
  'people',
  'organizations',
  'queue:ingest',
];

/**
 * Erasing people: everything that can name a person (people, memberships, activities, sent
 * emails, idempotency and asynchronous request records, payloads), and background requests.
 */
const PEOPLE_ERASER: readonly Access[] = [
  ...PEOPLE_LIFECYCLE,
  'activities',
  'emails',
  'payloads:erase',
];

/** Archiving, restoring and deleting organizations (also under the `accounts` names). */
const ORGANIZATION_LIFECYCLE: readonly Access[] = ['config:read', 'organizations', 'queue:ingest'];
/** Deleting them also deletes their activities (accounts' custom activities). */
const ORGANIZATION_DELETE: readonly Access[] = [...ORGANIZATION_LIFECYCLE, 'activities'];

/** Defining audiences: their definitions (config), counters, and queueing their builds. */
const AUDIENCE_WRITER: readonly Access[] = ['config:write', 'audiences', 'queue:audience-jobs'];

/** The console's people listings (`person/get`'s reads, its cursors and offset positions). */
const CONSOLE_PEOPLE_LISTING: readonly Access[] = [
  'config:read',
  'people:read',
  'activities:read',
  'organizations:read',
  'audiences:read',
  'indexes:read',
  'signing',
  'requests',
];

/** The public routes of email links: no key, small bodies, the signing secret in config. */
function tracking(access: Access[]): Partial<RouteDefinition> {
  return {
    auth: false,
    maxBodyBytes: 4 * 1024,
    memoryMb: 512,
    timeoutSeconds: 10,
    access: ['config:read', 'signing', ...access],
  };
}

/**
 * The API's own description, public (no key): the OpenAPI document, the reference page and the
 * files of its renderer (Swagger UI, from the npm package, served by a function of its own so
 * that no page depends on a CDN).
 */
function documentation(packageFiles: string[] = []): Partial<RouteDefinition> {
  return {
    auth: false,
    maxBodyBytes: 0,
    memoryMb: 256,
    timeoutSeconds: 10,
    access: [],
    ...(packageFiles.length > 0 ? { packageFiles } : {}),
  };
}

/**
 * The console's API: the signed-in user's token, and what each route reads or changes in
 * the config table (instances, data sources, keys, and the audit log beside them).
 */
function consoleApi(access: Access[]): Partial<RouteDefinition> {
  return { auth: false, console: true, memoryMb: 512, timeoutSeconds: 10, access };
}

/** The renderer's files the reference page loads (`GET /docs/<file>`). */
export const REFERENCE_ASSETS = ['swagger-ui-bundle.js', 'swagger-ui.css'] as const;

export const ROUTES: readonly RouteDefinition[] = [
  api('GET', '/health', 'health', { auth: false, maxBodyBytes: 0, memoryMb: 256, access: [] }),
  api('POST', '/v1/transactional/send', 'transactional-send', {
    // The spec's 6 MB cannot reach a function on AWS; the edge's limit is the real one.
    maxBodyBytes: EDGE_MAX_BODY_BYTES,
    access: [
      ...PEOPLE_WRITER.filter((need) => need !== 'queue:ingest' && need !== 'payloads:put'),
      'emails',
      'email-payloads:put',
      'queue:email',
      'signing',
    ],
    reservedConcurrency: 50,
  }),
  api('POST', '/v1/transactional/get', 'transactional-get', {
    access: ['config:read', 'emails:read'],
  }),
  // `emails:read`: the suppression list `suppression_list_field_id` checks.
  api('POST', '/v1/person/merge', 'person-merge', {
    maxBodyBytes: 2 * MB,
    access: [...PEOPLE_WRITER, 'emails:read'],
    reservedConcurrency: 100,
  }),
  api('POST', '/v1/organizations/merge', 'organizations-merge', ORGANIZATIONS_MERGE),
  api('PUT', '/v1/organizations/contacts/add', 'organizations-contacts-add', MEMBERSHIPS),
  api('PUT', '/v1/organizations/contacts/remove', 'organizations-contacts-remove', MEMBERSHIPS),
  api('POST', '/v1/activities/create', 'activities-create', {
    maxBodyBytes: 2 * MB,
    access: PEOPLE_WRITER,
    reservedConcurrency: 100,
  }),
  api('POST', '/v1/async/get', 'async-get', { access: ['config:read', 'requests'] }),
  api('POST', '/v1/definitions/activity/create', 'activity-definition-create', {
    access: ['config:write'],
  }),
  // What clients of the real API call first (docs/api.md, "Custom fields, tags").
  api('PUT', '/v1/definitions/activity/modify', 'activity-definition-modify', {
    access: ['config:write'],
  }),
  api('DELETE', '/v1/definitions/activity/delete', 'activity-definition-delete', {
    access: ['config:write'],
  }),
  api('POST', '/v1/person/custom-field/get', 'person-custom-field-get'),
  api('POST', '/v1/person/custom-field/create', 'person-custom-field-create', {
    access: ['config:write'],
  }),
  api('PUT', '/v1/person/custom-field/update', 'person-custom-field-update', {
    access: ['config:write'],
  }),
  // Organization fields under both names (one function each, like the other accounts routes).
  ...(['accounts', 'organizations'] as const).flatMap((area) => [
    api('POST', `/v1/${area}/custom-field/get`, 'organization-custom-field-get'),
    api('POST', `/v1/${area}/custom-field/create`, 'organization-custom-field-create', {
      access: ['config:write'],
    }),
    api('PUT', `/v1/${area}/custom-field/update`, 'organization-custom-field-update', {
      access: ['config:write'],
    }),
  ]),
  // Deleting a custom field of either kind (the real API's one route); the audiences are read
  // for filters that name it.
  api('DELETE', '/v1/instances/custom-field/delete', 'custom-field-delete', {
    access: ['config:write', 'audiences:read'],
  }),
  // Tags and their counts; the counts' pending changes are applied first (a write).
  api('POST', '/v1/tags/get', 'tags-get', {
    access: ['config:read', 'people', 'organizations'],
  }),
  api('POST', '/v1/organizations/get', 'organizations-get', ORGANIZATION_LISTING),
  api('POST', '/v1/person/get', 'person-get', {
    access: [
      'config:read',
      'people:read',
      'activities:read',
      'organizations:read',
      'audiences:read',
      'indexes:read',
      'signing',
    ],
    // A filter examines up to 1,000 candidates a request (docs/api.md, Listing).
    reservedConcurrency: 50,
  }),
  api('POST', '/v1/person/get-by-ids', 'person-get-by-ids', {
    access: ['config:read', 'people:read', 'activities:read', 'organizations:read'],
  }),
  api('POST', '/v1/person/get/activities', 'person-activities', {
    access: ['config:read', 'people:read', 'activities:read', 'organizations:read', 'signing'],
  }),
  // Beyond the spec (docs/api.md): what clients of the real API call besides.
  api('POST', '/v1/person/subscriptions', 'person-subscriptions', {
    access: ['config:read', 'people:read', 'audiences:read'],
  }),
  api('POST', '/v1/instance-schema/get', 'instance-schema-get'),
  api('POST', '/v1/organizations/get-by-ids', 'organizations-get-by-ids', ORGANIZATIONS_READ),
  // The accounts names newer clients use: the organizations' functions, with their grants.
  api('POST', '/v1/accounts/merge', 'organizations-merge', ORGANIZATIONS_MERGE),
  api('POST', '/v1/accounts/get', 'organizations-get', ORGANIZATION_LISTING),
  api('POST', '/v1/accounts/get-by-ids', 'organizations-get-by-ids', ORGANIZATIONS_READ),
  api('PUT', '/v1/accounts/contacts/add', 'organizations-contacts-add', MEMBERSHIPS),
  api('PUT', '/v1/accounts/contacts/remove', 'organizations-contacts-remove', MEMBERSHIPS),

  // Archive, restore and delete: `inclusion_ids` at once, `all_rows_selected` in
  // the background (the ingest worker).
  api('PUT', '/v1/person/archive', 'person-archive', { access: PEOPLE_LIFECYCLE }),
  api('PUT', '/v1/person/restore', 'person-restore', { access: PEOPLE_LIFECYCLE }),
  api('DELETE', '/v1/person/delete', 'person-delete', { access: PEOPLE_ERASER }),
  api('PUT', '/v1/organizations/archive', 'organizations-archive', {
    access: ORGANIZATION_LIFECYCLE,
  }),
  api('PUT', '/v1/organizations/restore', 'organizations-restore', {
    access: ORGANIZATION_LIFECYCLE,
  }),
  api('DELETE', '/v1/organizations/delete', 'organizations-delete', {
    access: ORGANIZATION_DELETE,
  }),
  // The same operations under the names newer clients use (one implementation).
  api('PUT', '/v1/accounts/archive', 'organizations-archive', { access: ORGANIZATION_LIFECYCLE }),
  api('PUT', '/v1/accounts/restore', 'organizations-restore', { access: ORGANIZATION_LIFECYCLE }),
  api('DELETE', '/v1/accounts/delete', 'organizations-delete', { access: ORGANIZATION_DELETE }),
  // Accounts' custom activities (`act:oc:`): recorded (merging their accounts) and listed.
  api('POST', '/v1/accounts/activities/create', 'account-activities-create', {
    maxBodyBytes: 2 * MB,
    access: ['config:read', 'organizations', 'activities'],
  }),
  api('POST', '/v1/accounts/get/activities', 'account-activities-get', {
    access: ['config:read', 'organizations:read', 'activities:read', 'signing'],
  }),
  // Audiences (docs/audiences.md): definitions, and members' preferences.
  ...(
    [
      ['POST', '/v1/audiences/create', 'audiences-create'],
      ['PUT', '/v1/audiences/update', 'audiences-update'],
      ['PUT', '/v1/audiences/archive', 'audiences-archive'],
      ['PUT', '/v1/audiences/restore', 'audiences-restore'],
      ['DELETE', '/v1/audiences/delete', 'audiences-delete'],
    ] as const
  ).map(([method, path, fn]) => api(method, path, fn, { access: AUDIENCE_WRITER })),
  api('POST', '/v1/audiences/get', 'audiences-get', {
    access: ['config:read', 'audiences:read'],
  }),
  api('PUT', '/v1/audience/subscribe', 'audience-subscribe', {
    // `async: true` is accepted onto the ingest queue (its body in the payloads bucket).
    access: ['config:read', 'people:read', 'audiences', 'queue:ingest', 'payloads:put'],
  }),
  // Webhooks (docs/webhooks.md): definitions and their secrets, in the config table.
  api('POST', '/v1/webhooks/create', 'webhooks-create', {
    access: ['config:write', 'webhook-secrets:wrap'],
  }),
  api('POST', '/v1/webhooks/get', 'webhooks-get'),
  api('PUT', '/v1/webhooks/update', 'webhooks-update', { access: ['config:write'] }),
  api('PUT', '/v1/webhooks/rotate-secret', 'webhooks-rotate-secret', {
    access: ['config:write', 'webhook-secrets:wrap'],
  }),
  api('DELETE', '/v1/webhooks/delete', 'webhooks-delete', { access: ['config:write'] }),
  // The attempt log and replays (docs/webhooks.md, "Attempts and replays"): the deliveries
  // table; listings' cursors are signed.
  api('POST', '/v1/webhooks/deliveries/get', 'webhooks-deliveries-get', {
    access: ['config:read', 'deliveries:read', 'signing'],
  }),
  api('POST', '/v1/webhooks/replay', 'webhooks-replay', {
    access: ['config:read', 'deliveries', 'queue:webhooks', 'queue:webhook-replays'],
  }),
  // Public and signed (no key): the links of sent emails. Tokens are query parameters.
  api('GET', '/t/c', 'email-click', tracking(['emails', 'activities'])),
  api('GET', '/t/o', 'email-open', tracking(['emails', 'activities'])),
  api('GET', '/t/u', 'unsubscribe-page', tracking(['emails:read', 'audiences:read'])),
  api(
    'POST',
    '/t/u',
    'unsubscribe',
    tracking(['emails', 'people', 'activities', 'organizations:read', 'audiences']),
  ),
  // The console's API (docs/console.md).
  api('GET', '/console/v1/me', 'console-me', { ...consoleApi(['config:read']), maxBodyBytes: 0 }),
  api('POST', '/console/v1/instances/get', 'console-instances-get', consoleApi(['config:read'])),
  api('POST', '/console/v1/keys/get', 'console-keys-get', consoleApi(['config:read'])),
  api(
    'POST',
    '/console/v1/data-sources/create',
    'console-data-sources-create',
    consoleApi(['config:write']),
  ),
  api(
    'PUT',
    '/console/v1/data-sources/modify',
    'console-data-sources-modify',
    consoleApi(['config:write']),
  ),
  api('POST', '/console/v1/keys/create', 'console-keys-create', consoleApi(['config:write'])),
  api('PUT', '/console/v1/keys/revoke', 'console-keys-revoke', consoleApi(['config:write'])),
  api('POST', '/console/v1/audit/get', 'console-audit-get', consoleApi(['config:read'])),
  api('POST', '/console/v1/activities/get', 'console-activities-get', consoleApi(['config:read'])),
  // People (reads): the listing as `person/get` reads it, with its cursors (kept in requests).
  api(
    'POST',
    '/console/v1/people/get',
    'console-people-get',
    consoleApi([
      'config:read',
      'people:read',
      'activities:read',
      'organizations:read',
      'audiences:read',
      'indexes:read',
      'signing',
      'requests',
    ]),
  ),
  api(
    'POST',
    '/console/v1/people/profile',
    'console-people-profile',
    consoleApi([
      'config:read',
      'people:read',
      'activities:read',
      'organizations:read',
      'emails:read',
      'audiences:read',
      'signing',
      'requests',
    ]),
  ),
  api(
    'POST',
    '/console/v1/activities/create',
    'console-activities-create',
    consoleApi(['config:write']),
  ),
  api(
    'PUT',
    '/console/v1/activities/modify',
    'console-activities-modify',
    consoleApi(['config:write']),
  ),
  api(
    'PUT',
    '/console/v1/activities/archive',
    'console-activities-archive',
    consoleApi(['config:write']),
  ),
  // Organizations (reads): the listing as `organizations/get` reads it; a profile's people as
  // `person/get` finds them (the field index), with its cursors and offset positions.
  api(
    'POST',
    '/console/v1/organizations/get',
    'console-organizations-get',
    consoleApi(['config:read', 'organizations:read', 'signing']),
  ),
  api(
    'POST',
    '/console/v1/organizations/profile',
    'console-organizations-profile',
    consoleApi([...CONSOLE_PEOPLE_LISTING]),
  ),
  // Audiences: definitions (config) and their counters; making one queues its build.
  api(
    'POST',
    '/console/v1/audiences/get',
    'console-audiences-get',
    consoleApi(['config:read', 'audiences:read']),
  ),
  api(
    'POST',
    '/console/v1/audiences/create',
    'console-audiences-create',
    consoleApi([...AUDIENCE_WRITER]),
  ),
  api(
    'PUT',
    '/console/v1/audiences/archive',
    'console-audiences-archive',
    consoleApi([...AUDIENCE_WRITER]),
  ),
  api(
    'POST',
    '/console/v1/audiences/members',
    'console-audiences-members',
    consoleApi([...CONSOLE_PEOPLE_LISTING]),
  ),
  // The overview (docs/console.md): counters, the emails' daily counters, webhooks and their
  // attempts (reads only), and the dead-letter queues' depths.
  api(
    'POST',
    '/console/v1/instances/overview',
    'console-overview',
    consoleApi([
      'config:read',
      'people:read',
      'organizations:read',
      'emails:read',
      'deliveries:read',
      'queues:dead-letters:depth',
    ]),
  ),
  // Custom fields: the configuration's, made and changed by the public API's rules.
  api('POST', '/console/v1/fields/get', 'console-fields-get', consoleApi(['config:read'])),
  api('POST', '/console/v1/fields/create', 'console-fields-create', consoleApi(['config:write'])),
  api('PUT', '/console/v1/fields/modify', 'console-fields-modify', consoleApi(['config:write'])),
  // Emails (reads): the instance's log and a person's emails, and one email's kept HTML.
  api(
    'POST',
    '/console/v1/emails/get',
    'console-emails-get',
    consoleApi(['config:read', 'emails:read']),
  ),
  api(
    'POST',
    '/console/v1/emails/preview',
    'console-emails-preview',
    consoleApi(['config:read', 'emails:read']),
  ),
  // Webhooks: the public API's objects; a replay and a rotation are audited (config:write).
  api('POST', '/console/v1/webhooks/get', 'console-webhooks-get', consoleApi(['config:read'])),
  api(
    'POST',
    '/console/v1/webhooks/attempts',
    'console-webhooks-attempts',
    consoleApi(['config:read', 'deliveries:read', 'signing', 'requests']),
  ),
  api(
    'POST',
    '/console/v1/webhooks/replay',
    'console-webhooks-replay',
    consoleApi(['config:write', 'deliveries', 'queue:webhooks', 'queue:webhook-replays']),
  ),
  api(
    'PUT',
    '/console/v1/webhooks/rotate',
    'console-webhooks-rotate',
    consoleApi(['config:write', 'webhook-secrets:wrap']),
  ),
  api('GET', '/openapi.json', 'openapi-document', documentation()),
  api('GET', '/docs', 'api-reference', documentation()),
  ...REFERENCE_ASSETS.map((file) =>
    api(
      'GET',
      `/docs/${file}`,
      'api-reference-assets',
      documentation(REFERENCE_ASSETS.map((name) => `swagger-ui-dist/${name}`)),
    ),
  ),
];

/**
 * The function behind API Gateway's `$default` route: it answers every request no route
 * matches with 404, or 405 where only the method is wrong, in the error envelope.
 */
export const FALLBACK_FUNCTION = {
  function: 'not-found',
  memoryMb: 256,
  timeoutSeconds: 10,
} as const;

export type RouteKey = `${Method} ${string}`;

export function routeKey(route: Pick<RouteDefinition, 'method' | 'path'>): RouteKey {
  return `${route.method} ${route.path}`;
}

export function findRoute(key: string): RouteDefinition {
  const route = ROUTES.find((candidate) => routeKey(candidate) === key);
  if (!route) throw new Error(`No route ${key} in the routes table`);
  return route;
}

export type RouteMatch =
  | { kind: 'route'; route: RouteDefinition }
  | { kind: 'wrong-method'; allowed: Method[] }
  | { kind: 'none' };

/** How API Gateway resolves a request against the table: exact path, then method. */
export function matchRoute(method: string, path: string): RouteMatch {
  const onPath = ROUTES.filter((route) => route.path === path);
  const route = onPath.find((candidate) => candidate.method === method.toUpperCase());
  if (route) return { kind: 'route', route };
  if (onPath.length > 0) return { kind: 'wrong-method', allowed: onPath.map((r) => r.method) };
  return { kind: 'none' };
}
