import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { asset, sendOk, settledStatus, until } from '../emails.js';
import { mergeOne, uniqueEmail } from '../people.js';
import { call, KEYS } from '../stack.js';
import { consoleCall, consoleUser, signIn } from './sign-in.js';

/**
 * The console's overview and custom fields against the stack: figures that follow what the
 * public API does (people, organizations, emails through the SES stand-in, webhook
 * deliveries), dead letters for platform admins only, fields made and changed here that the
 * public API then lists and takes, each change audited, and nothing of another tenant's.
 * The instances are shared with the other tests: figures are compared before and after.
 */
let acme = '';
let globex = '';
let admin = '';

beforeAll(async () => {
  [acme, globex, admin] = await Promise.all([
    signIn(consoleUser('ops@acme.test')),
    signIn(consoleUser('ops@globex.test')),
    signIn(consoleUser('admin@platform.test')),
  ]);
});

type Body = Record<string, unknown>;
interface Overview {
  people: { people: number; subscribers: number; organizations: number };
  emails: { from: string; to: string; sent: number; bounced: number; complained: number };
  webhooks: {
    id: string;
    enabled: boolean;
    disabled_reason: string | null;
    health: { state: string; failures: number };
    last_attempt: { outcome: string; status_code: number | null } | null;
  }[];
  dead_letters: { queues: { queue: string; messages: number | null }[]; total: number } | null;
}

async function overview(token: string, instance: string): Promise<Overview> {
  const answer = await consoleCall('POST', '/console/v1/instances/overview', token, {
    instance_id: instance,
  });
  expect({ status: answer.status, error: answer.body.error }).toEqual({
    status: 200,
    error: undefined,
  });
  return answer.body as unknown as Overview;
}

const auditOf = async (token: string, instance: string) =>
  (await consoleCall('POST', '/console/v1/audit/get', token, { instance_id: instance, limit: 100 }))
    .body.entries as { action: string; target: string; details: Body; actor: Body }[];

/** An instance's custom fields of both kinds, by ID (as a platform admin reads them). */
async function fieldsOf(instance: string): Promise<Map<string, Body>> {
  const answer = await consoleCall('POST', '/console/v1/fields/get', admin, {
    instance_id: instance,
  });
  expect(answer.status).toBe(200);
  const { person, organization } = answer.body as {
    person: { fields: Body[] };
    organization: { fields: Body[] };
  };
  return new Map([...person.fields, ...organization.fields].map((f) => [String(f.id), f]));
}

/** A receiver answering 200 on `/ok` and 500 elsewhere, on a port the system picks. */
let receiver: Server | undefined;
let receiverUrl = '';
const webhookIds: string[] = [];

beforeAll(async () => {
  receiver = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(request.url === '/ok' ? 200 : 500).end('x'));
  });
  await new Promise<void>((resolve) => receiver?.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const webhook_id of webhookIds) {
    await call('/v1/webhooks/delete', { key: KEYS.acme, method: 'DELETE', body: { webhook_id } });
  }
  await new Promise((resolve) => receiver?.close(resolve));
});

describe('the overview', () => {
  it('counts the people, subscribers and organizations the public API adds', async () => {
    const before = await overview(acme, 'acme');
    await mergeOne(KEYS.acme, { fields: { 'str::email': uniqueEmail('ov'), 'bol::p': true } });
    await mergeOne(KEYS.acme, { fields: { 'str::email': uniqueEmail('ov'), 'bol::p': false } });
    const org = await call('/v1/organizations/merge', {
      key: KEYS.acme,
      body: {
        merge_by: ['str:o:name'],
        organizations: [{ fields: { 'str:o:name': `Overview ${Date.now()}` } }],
      },
    });
    expect(org.status).toBe(200);
    const after = await overview(acme, 'acme');
    expect(after.people.people).toBeGreaterThanOrEqual(before.people.people + 2);
    expect(after.people.subscribers).toBeGreaterThanOrEqual(before.people.subscribers + 1);
    expect(after.people.organizations).toBeGreaterThanOrEqual(before.people.organizations + 1);
    expect(after.people.subscribers).toBeLessThanOrEqual(after.people.people);
  });

  it("counts this week's emails sent, bounced and complained about, once each", async () => {
    const before = await overview(admin, 'mailer');
    const today = new Date().toISOString().slice(0, 10);
    expect(before.emails.to).toBe(today);
    expect(Date.parse(before.emails.to) - Date.parse(before.emails.from)).toBe(6 * 86_400_000);
    const label = `ov${Date.now().toString(36)}`;
    const entries = await sendOk({
      asset: asset({ email_name: 'overview' }),
      emails: [
        { fields: { 'str::email': uniqueEmail('delivered') } },
        { fields: { 'str::email': `bounce+${label}@simulator.amazonses.com` } },
        { fields: { 'str::email': `complaint+${label}@simulator.amazonses.com` } },
      ],
    });
    const [delivered, bounced, complained] = entries.map((entry) => entry.message_id as string);
    await Promise.all([
      settledStatus(delivered ?? '', ['sent']),
      settledStatus(bounced ?? '', ['bounced']),
      settledStatus(complained ?? '', ['complained']),
    ]);
    const after = await overview(admin, 'mailer');
    expect(after.emails.sent).toBeGreaterThanOrEqual(before.emails.sent + 3);
    expect(after.emails.bounced).toBeGreaterThanOrEqual(before.emails.bounced + 1);
    expect(after.emails.complained).toBeGreaterThanOrEqual(before.emails.complained + 1);
  });

  it("shows each webhook's health: enabled or not, failures in a row, its newest attempt", async () => {
    const create = async (path: string, enabled: boolean) => {
      const answer = await call('/v1/webhooks/create', {
        key: KEYS.acme,
        body: { url: `${receiverUrl}${path}`, events: ['person.created'], enabled },
      });
      expect(answer.status).toBe(200);
      webhookIds.push(answer.body.id as string);
      return answer.body.id as string;
    };
    const healthy = await create('/ok', true);
    const failing = await create('/fail', true);
    const disabled = await create('/ok', false);
    await mergeOne(KEYS.acme, { fields: { 'str::email': uniqueEmail('hook') } });

    const seen = await until('both enabled webhooks to have an attempt', async () => {
      const { webhooks } = await overview(acme, 'acme');
      const byId = new Map(webhooks.map((webhook) => [webhook.id, webhook]));
      const ok = byId.get(healthy);
      const bad = byId.get(failing);
      return ok?.last_attempt && bad?.last_attempt && bad.health.failures > 0 ? byId : undefined;
    });
    expect(seen.get(healthy)).toMatchObject({
      enabled: true,
      health: { state: 'healthy', failures: 0 },
      last_attempt: { outcome: 'succeeded', status_code: 200 },
    });
    expect(seen.get(failing)).toMatchObject({
      enabled: true,
      health: { state: expect.stringMatching(/^(failing|paused)$/) as unknown },
      last_attempt: { outcome: 'failed', status_code: 500 },
    });
    expect(seen.get(disabled)).toMatchObject({
      enabled: false,
      health: { state: 'disabled', failures: 0 },
      last_attempt: null,
    });
  });

  it("shows the region's dead-letter queues to platform admins only", async () => {
    const mine = await overview(acme, 'acme');
    expect(mine.dead_letters).toBeNull();
    const all = await overview(admin, 'acme');
    expect(all.dead_letters?.queues.map((queue) => queue.queue)).toEqual([
      'ingest',
      'email',
      'email-events',
      'audience-jobs',
      'webhooks',
      'webhooks-slow',
      'webhook-replays',
      'stream-failures',
    ]);
    for (const queue of all.dead_letters?.queues ?? []) {
      expect(queue.messages).toEqual(expect.any(Number));
    }
    expect(all.dead_letters?.total).toBe(
      all.dead_letters?.queues.reduce((sum, queue) => sum + (queue.messages ?? 0), 0),
    );
  });
});

describe('custom fields', () => {
  const suffix = Date.now().toString(36);
  const tier = `Tier ${suffix}`;
  const tierId = `str:cm:tier-${suffix}`;
  const region = `Region ${suffix}`;
  const regionId = `sst:oc:region-${suffix}`;

  it('makes a select field of people and one of organizations that the public API lists and takes, changes their options, and audits each', async () => {
    const person = await consoleCall('POST', '/console/v1/fields/create', acme, {
      instance_id: 'acme',
      kind: 'person',
      name: tier,
      type: 'single_select',
      values: ['Bronze', 'Silver'],
    });
    expect(person).toMatchObject({
      status: 200,
      body: {
        instance_id: 'acme',
        kind: 'person',
        field: {
          id: tierId,
          name: tier,
          display_type: 'single_select',
          values: ['Bronze', 'Silver'],
          track_changes: false,
          source: 'api',
        },
      },
    });
    const organization = await consoleCall('POST', '/console/v1/fields/create', acme, {
      instance_id: 'acme',
      kind: 'organization',
      name: region,
      type: 'multi_select',
      values: ['EMEA', 'APAC'],
    });
    expect(organization).toMatchObject({
      status: 200,
      body: { kind: 'organization', field: { id: regionId, values: ['EMEA', 'APAC'] } },
    });

    const changed = await consoleCall('PUT', '/console/v1/fields/modify', acme, {
      instance_id: 'acme',
      kind: 'person',
      field_id: tierId,
      replace_values: ['Bronze', 'Silver', 'Gold'],
    });
    expect(changed).toMatchObject({
      status: 200,
      body: { field: { id: tierId, values: ['Bronze', 'Silver', 'Gold'] } },
    });
    const added = await consoleCall('PUT', '/console/v1/fields/modify', acme, {
      instance_id: 'acme',
      kind: 'organization',
      field_id: regionId,
      add_values: ['AMER'],
    });
    expect(added).toMatchObject({
      status: 200,
      body: { field: { id: regionId, values: ['EMEA', 'APAC', 'AMER'] } },
    });

    // The public API's own listings have them, with their options.
    const people = await call('/v1/person/custom-field/get', { key: KEYS.acme, body: {} });
    expect(people.body.fields).toContainEqual({
      field: expect.objectContaining({ id: tierId, dic_items: ['Bronze', 'Silver', 'Gold'] }),
      tracked_value: false,
    });
    const organizations = await call('/v1/organizations/custom-field/get', {
      key: KEYS.acme,
      body: {},
    });
    expect(organizations.body.fields).toContainEqual(
      expect.objectContaining({ id: regionId, dic_items: ['EMEA', 'APAC', 'AMER'] }),
    );
    // And takes the new option, refusing one the field does not have.
    const gold = await call('/v1/person/merge', {
      key: KEYS.acme,
      body: { people: [{ fields: { 'str::email': uniqueEmail('tier'), [tierId]: 'Gold' } }] },
    });
    expect(gold.status).toBe(200);
    expect(JSON.stringify(gold.body)).not.toMatch(/error/);
    const tin = await call('/v1/person/merge', {
      key: KEYS.acme,
      body: { people: [{ fields: { 'str::email': uniqueEmail('tier'), [tierId]: 'Tin' } }] },
    });
    expect(JSON.stringify(tin.body)).toContain(tierId);

    const listed = await consoleCall('POST', '/console/v1/fields/get', acme, {
      instance_id: 'acme',
    });
    expect(listed.status).toBe(200);
    const listing = listed.body as {
      person: { fields: Body[] };
      organization: { fields: Body[] };
    };
    expect(listing.person.fields).toContainEqual(
      expect.objectContaining({ id: tierId, values: ['Bronze', 'Silver', 'Gold'], unique: false }),
    );
    expect(listing.organization.fields).toContainEqual(
      expect.objectContaining({ id: regionId, track_changes: null, source: 'api' }),
    );

    const mine = (await auditOf(acme, 'acme')).filter(
      (entry) => entry.target === `field:${tierId}` || entry.target === `field:${regionId}`,
    );
    expect(mine.map((entry) => [entry.action, entry.target])).toEqual([
      ['field.modify', `field:${regionId}`],
      ['field.modify', `field:${tierId}`],
      ['field.create', `field:${regionId}`],
      ['field.create', `field:${tierId}`],
    ]);
    expect(mine[3]).toMatchObject({
      actor: { email: 'ops@acme.test' },
      details: { kind: 'person', display_type: 'single_select', options: 2 },
    });
  });

  it('refuses bad input with 400 naming the member, and writes nothing, not even an audit entry', async () => {
    const fieldsBefore = await fieldsOf('acme');
    const auditBefore = await auditOf(acme, 'acme');
    const cases: [string, 'POST' | 'PUT', Body, string][] = [
      ['/console/v1/fields/create', 'POST', { kind: 'person', name: 'X', type: 'texty' }, 'type'],
      [
        '/console/v1/fields/create',
        'POST',
        { kind: 'person', name: 'X', type: 'single_select' },
        'values',
      ],
      ['/console/v1/fields/create', 'POST', { kind: 'people', name: 'X', type: 'text' }, 'kind'],
      ['/console/v1/fields/create', 'POST', { kind: 'person', name: '', type: 'text' }, 'name'],
      [
        '/console/v1/fields/create',
        'POST',
        { kind: 'organization', name: 'X', type: 'text', track_changes: true },
        'track_changes',
      ],
      [
        '/console/v1/fields/create',
        'POST',
        { kind: 'person', name: 'X', type: 'text', extra: 1 },
        'extra',
      ],
      // Its name is taken (the field made above, or any earlier run's).
      ['/console/v1/fields/create', 'POST', { kind: 'person', name: tier, type: 'text' }, 'name'],
      [
        '/console/v1/fields/modify',
        'PUT',
        { kind: 'person', field_id: 'str::email', add_values: ['A'] },
        'field_id',
      ],
      [
        '/console/v1/fields/modify',
        'PUT',
        { kind: 'person', field_id: `str:cm:none-${suffix}`, add_values: ['A'] },
        'field_id',
      ],
      [
        '/console/v1/fields/modify',
        'PUT',
        { kind: 'person', field_id: tierId, replace_values: [] },
        'replace_values',
      ],
      ['/console/v1/fields/modify', 'PUT', { kind: 'person', field_id: tierId }, 'replace_values'],
      [
        '/console/v1/fields/modify',
        'PUT',
        { kind: 'organization', field_id: tierId, add_values: ['A'] },
        'field_id',
      ],
    ];
    for (const [path, method, body, member] of cases) {
      const answer = await consoleCall(method, path, acme, { instance_id: 'acme', ...body });
      expect({ path, body, status: answer.status }).toEqual({ path, body, status: 400 });
      expect(answer.body.error).toEqual(expect.stringContaining(member));
    }
    // Other tests may change acme meanwhile: what these requests name is compared.
    const fieldsAfter = await fieldsOf('acme');
    expect(fieldsAfter.get(tierId)).toEqual(fieldsBefore.get(tierId));
    expect([...fieldsAfter.keys()].filter((id) => /:x$/.test(id))).toEqual(
      [...fieldsBefore.keys()].filter((id) => /:x$/.test(id)),
    );
    const named = (entries: { target: string }[]) =>
      entries.filter((entry) =>
        /^field:(.*:x|str::email|.*-(?:tier|none)-|.*tier-)/.test(entry.target),
      );
    expect(named(await auditOf(acme, 'acme'))).toEqual(named(auditBefore));
  });
});

describe('isolation', () => {
  it("answers another tenant's instance as one that does not exist, and writes nothing", async () => {
    const plan = (await fieldsOf('acme')).get('str:cm:favourite-colour');
    const stolen = `Stolen ${Date.now()}`;
    const attempts = await Promise.all([
      consoleCall('POST', '/console/v1/instances/overview', globex, { instance_id: 'acme' }),
      consoleCall('POST', '/console/v1/fields/get', globex, { instance_id: 'acme' }),
      consoleCall('POST', '/console/v1/fields/create', globex, {
        instance_id: 'acme',
        kind: 'person',
        name: stolen,
        type: 'text',
      }),
      consoleCall('PUT', '/console/v1/fields/modify', globex, {
        instance_id: 'acme',
        kind: 'person',
        field_id: 'str:cm:favourite-colour',
        add_values: ['Stolen'],
      }),
      consoleCall('POST', '/console/v1/instances/overview', acme, { instance_id: 'nope' }),
    ]);
    for (const answer of attempts) {
      expect(answer.status).toBe(404);
      expect(answer.body.error).toMatch(/^instance_id: no instance "(acme|nope)" here/);
    }
    const after = await fieldsOf('acme');
    expect(after.get('str:cm:favourite-colour')).toEqual(plan);
    expect([...after.values()].map((field) => field.name)).not.toContain(stolen);
    const audit = await auditOf(admin, 'acme');
    expect(audit.filter((entry) => entry.actor.email === 'ops@globex.test')).toEqual([]);
  });
});
