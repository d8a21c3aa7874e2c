import { beforeAll, describe, expect, it } from '@jest/globals';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { call, KEYS } from '../stack.js';
import { consoleCall, consoleUser, issuerUrl, signIn } from './sign-in.js';
import { until } from '../emails.js';

/**
 * The console's API against the stack's local issuer (the same verification code as with
 * Cognito): who may see what, that it takes the signed-in user's token and never an API key
 * (and the public API the reverse), keys minted and revoked through it, and the audit log of
 * every change.
 */
let acme = '';
let globex = '';
let admin = '';
let nobody = '';

beforeAll(async () => {
  [acme, globex, admin, nobody] = await Promise.all([
    signIn(consoleUser('ops@acme.test')),
    signIn(consoleUser('ops@globex.test')),
    signIn(consoleUser('admin@platform.test')),
    signIn(consoleUser('nobody@example.test')),
  ]);
});

const ids = (body: Record<string, unknown>) =>
  (body.instances as { id: string }[]).map((instance) => instance.id);

describe('signing in', () => {
  it('shows a user the instances their groups name, and an admin every instance of the region', async () => {
    const me = await consoleCall('GET', '/console/v1/me', acme);
    expect(me).toMatchObject({
      status: 200,
      body: { email: 'ops@acme.test', platform_admin: false },
    });
    expect(ids(me.body)).toEqual(['acme']);
    expect(typeof me.body.subject).toBe('string');

    const all = await consoleCall('POST', '/console/v1/instances/get', admin, {});
    expect(all.status).toBe(200);
    expect(ids(all.body)).toEqual(expect.arrayContaining(['acme', 'globex', 'people']));
    // koala and stroopwafel live in other regions: this region's console does not list them.
    expect(ids(all.body)).not.toContain('koala');
    expect(ids(all.body)).not.toContain('stroopwafel');

    const none = await consoleCall('POST', '/console/v1/instances/get', nobody, {});
    expect(none).toMatchObject({ status: 200, body: { instances: [] } });
  });

  it('refuses a request without a valid sign-in (401), and never takes an API key', async () => {
    const refusals = await Promise.all([
      consoleCall('GET', '/console/v1/me', undefined),
      consoleCall('GET', '/console/v1/me', 'not-a-token'),
      consoleCall('GET', '/console/v1/me', `${acme.slice(0, -4)}AAAA`),
      consoleCall(
        'POST',
        '/console/v1/keys/get',
        undefined,
        { instance_id: 'acme' },
        {
          'x-api-key': KEYS.acme,
        },
      ),
    ]);
    for (const refused of refusals) {
      expect(refused.status).toBe(401);
      expect(refused.body.error).toMatch(/^Sign in to the console: /);
    }
  });

  it('refuses a token signed by a key the issuer does not publish', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ 'cognito:groups': ['platform-admin'], email: 'x@y.test' })
      .setProtectedHeader({ alg: 'RS256', kid: (await exportJWK(publicKey)).n?.slice(0, 8) })
      .setIssuer(issuerUrl())
      .setAudience('cdp-console')
      .setSubject('forged')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
    const refused = await consoleCall('POST', '/console/v1/instances/get', forged, {});
    expect(refused.status).toBe(401);
    expect(refused.body.error).toMatch(/not valid or has expired/);
  });

  it('is refused by the public API: a console token is not an API key', async () => {
    const answer = await call('/v1/person/get', {
      body: { limit: 1 },
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(answer.status).toBe(401);
  });
});

describe('isolation', () => {
  it("answers another tenant's instance as one that does not exist, and writes nothing", async () => {
    const before = await consoleCall('POST', '/console/v1/keys/get', admin, {
      instance_id: 'globex',
    });
    const auditBefore = await consoleCall('POST', '/console/v1/audit/get', admin, {
      instance_id: 'globex',
    });
    const attempts = await Promise.all([
      consoleCall('POST', '/console/v1/keys/get', acme, { instance_id: 'globex' }),
      consoleCall('POST', '/console/v1/keys/create', acme, {
        instance_id: 'globex',
        data_source: 'CRM',
      }),
      consoleCall('PUT', '/console/v1/keys/revoke', acme, {
        instance_id: 'globex',
        key_hash: (
          (before.body.data_sources as { keys: { key_hash: string }[] }[])[0]?.keys[0] ?? {
            key_hash: '0'.repeat(64),
          }
        ).key_hash,
      }),
      consoleCall('POST', '/console/v1/audit/get', acme, { instance_id: 'globex' }),
      consoleCall('POST', '/console/v1/keys/get', nobody, { instance_id: 'acme' }),
      consoleCall('POST', '/console/v1/keys/get', acme, { instance_id: 'no-such-instance' }),
    ]);
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({
        status: 404,
        body: { details: [{ field: 'instance_id', error: 'not found' }] },
      });
    }
    // The same answer whether the instance exists or not: nothing to learn from it.
    expect(attempts[0].body.error).toBe(
      'instance_id: no instance "globex" here that you may manage',
    );
    expect(
      await consoleCall('POST', '/console/v1/keys/get', admin, { instance_id: 'globex' }),
    ).toEqual(before);
    expect(
      await consoleCall('POST', '/console/v1/audit/get', admin, { instance_id: 'globex' }),
    ).toEqual(auditBefore);
    // Each user still manages their own.
    expect(
      (await consoleCall('POST', '/console/v1/keys/get', globex, { instance_id: 'globex' })).status,
    ).toBe(200);
  });
});

describe('API keys through the console', () => {
  it('mints a key shown once that the public API takes, revokes it, and audits both', async () => {
    const created = await consoleCall('POST', '/console/v1/keys/create', acme, {
      instance_id: 'acme',
      data_source: 'Website',
    });
    expect(created.status).toBe(200);
    const { key, key_hash: keyHash } = created.body as { key: string; key_hash: string };
    expect(key).toMatch(/^cdp_default_/);
    expect(keyHash).toMatch(/^[0-9a-f]{64}$/);

    const works = await call('/v1/person/get', { key, body: { limit: 1 } });
    expect(works.status).toBe(200);

    // Listed by its hash only: the key itself is never shown again.
    const listed = await consoleCall('POST', '/console/v1/keys/get', acme, { instance_id: 'acme' });
    expect(JSON.stringify(listed.body)).not.toContain(key);
    const website = (
      listed.body.data_sources as { name: string; keys: { key_hash: string; origin: string }[] }[]
    ).find((source) => source.name === 'Website');
    expect(website?.keys).toContainEqual(
      expect.objectContaining({ key_hash: keyHash, origin: 'minted', revoked_at: null }),
    );

    const revoked = await consoleCall('PUT', '/console/v1/keys/revoke', acme, {
      instance_id: 'acme',
      key_hash: keyHash,
    });
    expect(revoked).toEqual({
      status: 200,
      body: { instance_id: 'acme', key_hash: keyHash, revoked: true },
    });
    await until('the revoked key to be refused', async () =>
      (await call('/v1/person/get', { key, body: { limit: 1 } })).status === 401 ? true : undefined,
    );
    const again = await consoleCall('PUT', '/console/v1/keys/revoke', acme, {
      instance_id: 'acme',
      key_hash: keyHash,
    });
    expect(again.status).toBe(404);

    const audit = await consoleCall('POST', '/console/v1/audit/get', acme, {
      instance_id: 'acme',
      limit: 100,
    });
    const mine = (audit.body.entries as Record<string, unknown>[]).filter(
      (entry) => (entry.details as { key_hash?: string }).key_hash === keyHash,
    );
    expect(mine.map((entry) => entry.action)).toEqual(['key.revoke', 'key.create']);
    for (const entry of mine) {
      expect(entry).toMatchObject({
        actor: { email: 'ops@acme.test' },
        target: 'data_source:Website',
        source_ip: '127.0.0.1',
      });
      expect(entry.request_id).toEqual(expect.any(String));
      expect(Date.parse(String(entry.at))).toBeGreaterThan(Date.now() - 120_000);
    }
    expect(JSON.stringify(audit.body)).not.toContain(key);
  });

  it('pages the audit log, newest first', async () => {
    for (let i = 0; i < 3; i += 1) {
      const made = await consoleCall('POST', '/console/v1/keys/create', globex, {
        instance_id: 'globex',
        data_source: 'CRM',
      });
      expect(made.status).toBe(200);
      await consoleCall('PUT', '/console/v1/keys/revoke', globex, {
        instance_id: 'globex',
        key_hash: made.body.key_hash,
      });
    }
    const first = await consoleCall('POST', '/console/v1/audit/get', globex, {
      instance_id: 'globex',
      limit: 2,
    });
    expect(first.status).toBe(200);
    expect(first.body.entries).toHaveLength(2);
    const second = await consoleCall('POST', '/console/v1/audit/get', globex, {
      instance_id: 'globex',
      limit: 2,
      before: first.body.next,
    });
    const times = [
      ...(first.body.entries as { at: string }[]),
      ...(second.body.entries as { at: string }[]),
    ].map((entry) => entry.at);
    expect(times).toEqual([...times].sort().reverse());
    expect(new Set(times).size).toBe(times.length);
  });

  it('names the field of a bad request, and writes nothing', async () => {
    const unknownSource = await consoleCall('POST', '/console/v1/keys/create', acme, {
      instance_id: 'acme',
      data_source: 'Nope',
    });
    expect(unknownSource).toMatchObject({
      status: 400,
      body: { details: [{ field: 'data_source', error: 'no such data source' }] },
    });
    const badHash = await consoleCall('PUT', '/console/v1/keys/revoke', acme, {
      instance_id: 'acme',
      key_hash: 'abc',
    });
    expect(badHash.status).toBe(400);
    expect(badHash.body.error).toMatch(/key_hash/);
    const extra = await consoleCall('POST', '/console/v1/keys/get', acme, {
      instance_id: 'acme',
      admin: true,
    });
    expect(extra.status).toBe(400);
    expect(extra.body.error).toMatch(/admin/);
  });
});

describe('activity definitions through the console', () => {
  const suffix = Math.random().toString(36).slice(2, 7);
  const id = `act:cm:renewed-${suffix}`;
  const definition = {
    id,
    name: `Renewed ${suffix}`,
    display_text: 'Renewed {{attribute.plan}} for {{attribute.seats}} seats',
    attributes: [
      { id: 'str:cm:plan', name: 'Plan' },
      { id: 'int:cm:seats', name: 'Seats', kind: 'number' },
    ],
    conversion_value: false,
    track_as_touch: true,
  };
  const record = () =>
    call('/v1/activities/create', {
      key: KEYS.acme,
      body: {
        activities: [
          {
            activity_id: id,
            fields: { 'str::email': `renewed-${suffix}@acme.test` },
            attributes: { 'str:cm:plan': 'Team', 'int:cm:seats': 7 },
          },
        ],
      },
    });

  it('defines one usable at once, shows it, changes it, archives it, and audits each', async () => {
    const created = await consoleCall('POST', '/console/v1/activities/create', acme, {
      instance_id: 'acme',
      definition,
    });
    expect(created).toMatchObject({ status: 200, body: { activity: definition } });

    const recorded = await record();
    expect(recorded.status).toBe(200);
    const personId = (recorded.body.activities as { person_id: string }[])[0]?.person_id;
    const timeline = await call('/v1/person/get/activities', {
      key: KEYS.acme,
      body: { person_id: personId },
    });
    expect(timeline.body.activities).toContainEqual(
      expect.objectContaining({ field_id: id, display: 'Renewed Team for 7 seats' }),
    );

    const listed = await consoleCall('POST', '/console/v1/activities/get', acme, {
      instance_id: 'acme',
    });
    expect(listed.body.activities).toContainEqual(expect.objectContaining({ id }));

    const again = await consoleCall('POST', '/console/v1/activities/create', acme, {
      instance_id: 'acme',
      definition,
    });
    expect(again.status).toBe(409);

    const modified = await consoleCall('PUT', '/console/v1/activities/modify', acme, {
      instance_id: 'acme',
      definition: { ...definition, display_text: '{{attribute.plan}} again' },
    });
    expect(modified).toMatchObject({
      status: 200,
      body: { activity: { id, display_text: '{{attribute.plan}} again' } },
    });

    const archived = await consoleCall('PUT', '/console/v1/activities/archive', acme, {
      instance_id: 'acme',
      activity_field_id: id,
    });
    expect(archived).toEqual({ status: 200, body: { archived_activity: id } });
    const refused = await record();
    expect(JSON.stringify(refused.body)).toMatch(/archived|activity_id/);

    const audit = await consoleCall('POST', '/console/v1/audit/get', acme, {
      instance_id: 'acme',
      limit: 100,
    });
    const mine = (audit.body.entries as { action: string; target: string }[]).filter(
      (entry) => entry.target === `activity:${id}`,
    );
    expect(mine.map((entry) => entry.action)).toEqual([
      'activity.archive',
      'activity.modify',
      'activity.create',
    ]);
  });

  it("refuses a bad definition naming its field, and another tenant's instance as missing", async () => {
    const bad = await consoleCall('POST', '/console/v1/activities/create', acme, {
      instance_id: 'acme',
      definition: { id: 'act:cm:bad-one', name: 'Bad', attributes: [{ id: 'str::x', name: 'X' }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/attributes/);
    const theirs = await consoleCall('POST', '/console/v1/activities/create', acme, {
      instance_id: 'globex',
      definition: { ...definition, id: `act:cm:theirs-${suffix}` },
    });
    expect(theirs.status).toBe(404);
    const listed = await consoleCall('POST', '/console/v1/activities/get', globex, {
      instance_id: 'globex',
    });
    expect(JSON.stringify(listed.body)).not.toContain(`theirs-${suffix}`);
  });
});

describe('people through the console', () => {
  it("searches people and shows a profile with the timeline's display text, to its tenant only", async () => {
    const email = `profile-${Math.random().toString(36).slice(2, 8)}@acme.test`;
    const merged = await call('/v1/activities/create', {
      key: KEYS.acme,
      body: {
        activities: [
          {
            activity_id: 'act:cm:purchased',
            fields: { 'str::email': email, 'str::first': 'Pat' },
            attributes: { 'str:cm:item': 'Lamp', 'int:cm:price': 5000 },
          },
        ],
      },
    });
    expect(merged.status).toBe(200);
    const personId = (merged.body.activities as { person_id: string }[])[0]?.person_id ?? '';

    const found = await consoleCall('POST', '/console/v1/people/get', acme, {
      instance_id: 'acme',
      q: email,
    });
    expect(found.status).toBe(200);
    expect(found.body.contacts).toEqual([
      {
        id: personId,
        fields: expect.objectContaining({ 'str::email': email, 'str::first': 'Pat' }),
      },
    ]);

    const profile = await consoleCall('POST', '/console/v1/people/profile', acme, {
      instance_id: 'acme',
      person_id: personId,
    });
    expect(profile.status).toBe(200);
    expect(profile.body.fields).toContainEqual({
      id: 'str::email',
      label: expect.any(String),
      value: email,
    });
    expect(profile.body.activities).toContainEqual(
      expect.objectContaining({ activity_id: 'act:cm:purchased', display: 'Purchased' }),
    );
    expect(profile.body.activities).toContainEqual(
      expect.objectContaining({ activity_id: 'act::s-all', display: 'Subscribed to email.' }),
    );

    const theirs = await consoleCall('POST', '/console/v1/people/profile', globex, {
      instance_id: 'acme',
      person_id: personId,
    });
    expect(theirs.status).toBe(404);
    const elsewhere = await consoleCall('POST', '/console/v1/people/profile', globex, {
      instance_id: 'globex',
      person_id: personId,
    });
    expect(elsewhere).toMatchObject({
      status: 404,
      body: { details: [{ field: 'person_id', error: 'not found' }] },
    });
  });
});

describe("the console's people filter", () => {
  it('lists the people a filter matches, offers the fields, and refuses a filter the parser does not take', async () => {
    const last = `Filtered${Math.random().toString(36).slice(2, 8)}`;
    const people = ['Ann', 'Bob'].map((first) => ({
      fields: {
        'str::email': `${first.toLowerCase()}-${last}@acme.test`.toLowerCase(),
        'str::first': first,
        'str::last': last,
      },
    }));
    expect((await call('/v1/person/merge', { key: KEYS.acme, body: { people } })).status).toBe(200);
    const byLast = { '$str::is': { field_id: 'str::last', value: last } };
    // The filter reads the field index the people stream keeps: a moment behind the merge.
    const both = await until('both people in the filtered listing', async () => {
      const page = await consoleCall('POST', '/console/v1/people/get', acme, {
        instance_id: 'acme',
        filter: byLast,
      });
      return (page.body.contacts as unknown[]).length === 2 ? page : undefined;
    });
    expect(both.status).toBe(200);
    expect(both.body.filter_fields).toContainEqual(
      expect.objectContaining({
        id: 'str::last',
        operators: expect.arrayContaining([expect.objectContaining({ operator: '$str::is' })]),
      }),
    );
    const ann = await consoleCall('POST', '/console/v1/people/get', acme, {
      instance_id: 'acme',
      filter: { $and: [byLast, { '$str::is': { field_id: 'str::first', value: 'Ann' } }] },
    });
    expect(ann.body.contacts).toEqual([
      {
        id: expect.any(String),
        fields: expect.objectContaining({ 'str::first': 'Ann', 'str::last': last }),
      },
    ]);

    const refused = await consoleCall('POST', '/console/v1/people/get', acme, {
      instance_id: 'acme',
      filter: { '$str::sounds_like': { field_id: 'str::first', value: 'Ann' } },
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body.details)).toContain('filter');
    // Another tenant's user: the same answer as for an instance that does not exist.
    const theirs = await consoleCall('POST', '/console/v1/people/get', globex, {
      instance_id: 'acme',
      filter: byLast,
    });
    expect(theirs.status).toBe(404);
  });
});

describe('data sources through the console', () => {
  it('makes one whose minted key merges by its preferences, refuses a taken name or bad keys, and audits it', async () => {
    const name = `Mobile ${Math.random().toString(36).slice(2, 7)}`;
    const made = await consoleCall('POST', '/console/v1/data-sources/create', acme, {
      instance_id: 'acme',
      data_source: { name, merge_by: ['str::ei'], merge_strategy: 1 },
    });
    expect(made).toEqual({
      status: 200,
      body: {
        instance_id: 'acme',
        data_source: { name, merge_by: ['str::ei'], merge_strategy: 1, find_strategy: 0 },
      },
    });
    const key = await consoleCall('POST', '/console/v1/keys/create', acme, {
      instance_id: 'acme',
      data_source: name,
    });
    expect(key.status).toBe(200);
    // Its merge preferences apply: merged by the external ID, an email alone is refused.
    const external = `ext-${Math.random().toString(36).slice(2, 9)}`;
    const merged = await call('/v1/person/merge', {
      key: String(key.body.key),
      body: { people: [{ fields: { 'str::ei': external } }] },
    });
    expect(merged.status).toBe(200);
    expect((merged.body.people as { status: string }[])[0]?.status).toBe('created');

    const taken = await consoleCall('POST', '/console/v1/data-sources/create', acme, {
      instance_id: 'acme',
      data_source: { name, merge_by: ['str::email'] },
    });
    expect(taken.status).toBe(409);
    const badKey = await consoleCall('POST', '/console/v1/data-sources/create', acme, {
      instance_id: 'acme',
      data_source: { name: `${name} 2`, merge_by: ['str::first'] },
    });
    expect(badKey).toMatchObject({
      status: 400,
      body: { details: [{ field: 'data_source.merge_by.0' }] },
    });
    const theirs = await consoleCall('POST', '/console/v1/data-sources/create', globex, {
      instance_id: 'acme',
      data_source: { name: `${name} 3` },
    });
    expect(theirs.status).toBe(404);

    const audit = await consoleCall('POST', '/console/v1/audit/get', acme, {
      instance_id: 'acme',
      limit: 100,
    });
    expect(audit.body.entries).toContainEqual(
      expect.objectContaining({
        action: 'data_source.create',
        target: `data_source:${name}`,
        details: { merge_by: 'str::ei', merge_strategy: 1, find_strategy: 0 },
      }),
    );
  });
});
