import { beforeAll, describe, expect, it } from '@jest/globals';
import { until } from '../emails.js';
import { call, KEYS } from '../stack.js';
import { auditOf, emailsOf, mergePeople, suffix } from './groups.js';
import { consoleCall, consoleUser, signIn } from './sign-in.js';

/**
 * The console's audiences against the test stack: audiences made with a filter in the API's
 * language (checked by its parser), built in the background, counted by their counters and
 * paged by their members, archived; every change audited, another tenant's user answered 404
 * with nothing written, bad input answered 400 naming the field.
 */
let acme = '';
let globex = '';

beforeAll(async () => {
  [acme, globex] = await Promise.all([
    signIn(consoleUser('ops@acme.test')),
    signIn(consoleUser('ops@globex.test')),
  ]);
});

describe('audiences through the console', () => {
  const token = `Aud${suffix}`;
  const name = `Grp audience ${suffix}`;
  const filter = {
    $and: [
      { '$str::is': { field_id: 'str::first', value: token } },
      { $has_any_value: { field_id: 'str::email' } },
    ],
  };
  const memberEmails = [`a-${suffix}@acme.test`, `b-${suffix}@acme.test`, `c-${suffix}@acme.test`];
  let audienceId = '';

  it('makes an audience from a filter, audited, whose members are found in the background', async () => {
    await mergePeople([
      ...memberEmails.map((email) => ({ 'str::email': email, 'str::first': token })),
      // Not a member: another first name.
      { 'str::email': `d-${suffix}@acme.test`, 'str::first': `${token}x` },
    ]);
    const made = await consoleCall('POST', '/console/v1/audiences/create', acme, {
      instance_id: 'acme',
      name,
      filter,
    });
    expect(made.status).toBe(200);
    const audience = made.body.audience as Record<string, unknown>;
    expect(audience).toMatchObject({
      name,
      filter,
      members: 0,
      building: true,
      archived_at: null,
      held_reason: null,
    });
    audienceId = String(audience.id);
    expect(audienceId).toMatch(/^[0-9a-f]{24}$/);
    expect(await auditOf('acme', acme)).toContainEqual(
      expect.objectContaining({
        action: 'audience.create',
        target: `audience:${name}`,
        details: { filter_sha: expect.stringMatching(/^[0-9a-f]{40}$/), exit_filter_sha: null },
      }),
    );

    const built = await until('the audience built', async () => {
      const listed = await consoleCall('POST', '/console/v1/audiences/get', acme, {
        instance_id: 'acme',
        search_term: name,
      });
      expect(listed.status).toBe(200);
      const [entry] = listed.body.audiences as Record<string, unknown>[];
      return entry && entry.building === false ? entry : undefined;
    });
    expect(built).toMatchObject({ id: audienceId, members: 3, subscribers: 3 });
    // The public API's own answer: the same counters.
    const publicView = await call('/v1/audiences/get', {
      key: KEYS.acme,
      body: { search_term: name },
    });
    expect(publicView.body).toEqual([
      expect.objectContaining({ id: audienceId, members: 3, subscribers: 3 }),
    ]);
    // The audit entry names the filter as the API hashes it.
    const [stored] = publicView.body as unknown as { filter_sha: string }[];
    expect(await auditOf('acme', acme)).toContainEqual(
      expect.objectContaining({
        target: `audience:${name}`,
        details: { filter_sha: stored?.filter_sha, exit_filter_sha: null },
      }),
    );

    // Members, a page at a time by the cursor.
    const page1 = await consoleCall('POST', '/console/v1/audiences/members', acme, {
      instance_id: 'acme',
      audience_id: audienceId,
      limit: 2,
    });
    expect(page1.status).toBe(200);
    expect(page1.body).toMatchObject({ total: 3, has_more: true, next_offset: 2 });
    const page2 = await consoleCall('POST', '/console/v1/audiences/members', acme, {
      instance_id: 'acme',
      audience_id: audienceId,
      limit: 2,
      offset: 2,
      cursor_id: page1.body.cursor_id,
    });
    expect(page2.body).toMatchObject({ total: 3, has_more: false });
    expect([...emailsOf(page1.body.contacts), ...emailsOf(page2.body.contacts)].sort()).toEqual(
      memberEmails,
    );
  });

  it('offers the builder the fields and the operators that read each', async () => {
    const listed = await consoleCall('POST', '/console/v1/audiences/get', acme, {
      instance_id: 'acme',
    });
    const fields = listed.body.filter_fields as {
      id: string;
      operators: { operator: string; kind: string }[];
    }[];
    const first = fields.find((field) => field.id === 'str::first');
    expect(first?.operators).toContainEqual({ operator: '$str::is', label: 'is', kind: 'text' });
    expect(first?.operators.map((o) => o.operator)).not.toContain('$int::is');
    const lastSeen = fields.find((field) => field.id === 'l');
    expect(lastSeen?.operators).toContainEqual({
      operator: '$tme::relative_less_than',
      label: 'less than … days ago',
      kind: 'days',
    });
  });

  it('refuses a bad filter, a taken name and bad input naming the field, and writes nothing', async () => {
    const refused = `Grp refused ${suffix}`;
    const answers = await Promise.all([
      consoleCall('POST', '/console/v1/audiences/create', acme, {
        instance_id: 'acme',
        name: refused,
        filter: { $and: [{ '$int::is': { field_id: 'str::first', value: 1 } }] },
      }),
      consoleCall('POST', '/console/v1/audiences/create', acme, {
        instance_id: 'acme',
        name: refused,
        filter: { $and: [{ '$str::sounds_like': { field_id: 'str::first', value: 'x' } }] },
      }),
      consoleCall('POST', '/console/v1/audiences/create', acme, {
        instance_id: 'acme',
        name: refused,
        filter: { $and: [{ '$int::greater_than': { field_id: 'int:cm:nobody', value: 1 } }] },
      }),
      consoleCall('POST', '/console/v1/audiences/create', acme, {
        instance_id: 'acme',
        name: '',
        filter,
      }),
      consoleCall('POST', '/console/v1/audiences/create', acme, {
        instance_id: 'acme',
        name: refused,
        filter,
        extra: true,
      }),
      consoleCall('POST', '/console/v1/audiences/members', acme, {
        instance_id: 'acme',
        audience_id: 'nope',
      }),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([400, 400, 400, 400, 400, 400]);
    expect(answers[0].body).toMatchObject({
      details: [{ field: 'filter.$and[0].$int::is.field_id' }],
    });
    expect(answers[1].body.error).toMatch(/^filter\.\$and\[0\]: unknown operator/);
    expect(answers[2].body).toMatchObject({
      details: [{ field: 'filter.$and[0].$int::greater_than.field_id' }],
    });
    expect(answers[3].body.error).toMatch(/name/);
    expect(answers[4].body.error).toMatch(/extra/);
    expect(answers[5].body.error).toMatch(/audience_id/);

    const taken = await consoleCall('POST', '/console/v1/audiences/create', acme, {
      instance_id: 'acme',
      name: name.toUpperCase(),
      filter,
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toMatch(/^name: /);

    const listed = await consoleCall('POST', '/console/v1/audiences/get', acme, {
      instance_id: 'acme',
      search_term: suffix,
    });
    expect((listed.body.audiences as { name: string }[]).map((a) => a.name)).toEqual([name]);
    const audit = await auditOf('acme', acme);
    expect(audit.filter((entry) => entry.target === `audience:${refused}`)).toEqual([]);
    expect(
      audit.filter((entry) => entry.target.toLowerCase() === `audience:${name.toLowerCase()}`),
    ).toHaveLength(1);
  });

  it("answers another tenant's user 404 for acme's audiences and writes nothing", async () => {
    const attempts = await Promise.all([
      consoleCall('POST', '/console/v1/audiences/get', globex, { instance_id: 'acme' }),
      consoleCall('POST', '/console/v1/audiences/create', globex, {
        instance_id: 'acme',
        name: `Grp theirs ${suffix}`,
        filter,
      }),
      consoleCall('PUT', '/console/v1/audiences/archive', globex, {
        instance_id: 'acme',
        audience_id: audienceId,
      }),
      consoleCall('POST', '/console/v1/audiences/members', globex, {
        instance_id: 'acme',
        audience_id: audienceId,
      }),
    ]);
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({
        status: 404,
        body: { details: [{ field: 'instance_id', error: 'not found' }] },
      });
    }
    // In their own instance, acme's audience does not exist.
    const [members, archive] = await Promise.all([
      consoleCall('POST', '/console/v1/audiences/members', globex, {
        instance_id: 'globex',
        audience_id: audienceId,
      }),
      consoleCall('PUT', '/console/v1/audiences/archive', globex, {
        instance_id: 'globex',
        audience_id: audienceId,
      }),
    ]);
    expect(members).toMatchObject({ status: 404, body: { details: [{ field: 'audience_id' }] } });
    expect(archive).toMatchObject({ status: 404, body: { details: [{ field: 'audience_id' }] } });

    const listed = await consoleCall('POST', '/console/v1/audiences/get', acme, {
      instance_id: 'acme',
      search_term: suffix,
    });
    expect(listed.body.audiences).toEqual([
      expect.objectContaining({ id: audienceId, archived_at: null }),
    ]);
    const audit = await auditOf('acme', acme);
    expect(audit.filter((entry) => entry.target === `audience:Grp theirs ${suffix}`)).toEqual([]);
    expect(audit.filter((entry) => entry.target === `audience:${audienceId}`)).toEqual([]);
    expect(
      (await auditOf('globex', globex)).filter((entry) => entry.target.includes(suffix)),
    ).toEqual([]);
  });

  it('archives an audience, audited: its members stay, it leaves the live list', async () => {
    const archived = await consoleCall('PUT', '/console/v1/audiences/archive', acme, {
      instance_id: 'acme',
      audience_id: audienceId,
    });
    expect(archived.status).toBe(200);
    expect(archived.body.audience).toMatchObject({
      id: audienceId,
      members: 3,
      archived_at: expect.any(String),
    });
    const [live, gone] = await Promise.all([
      consoleCall('POST', '/console/v1/audiences/get', acme, {
        instance_id: 'acme',
        search_term: suffix,
      }),
      consoleCall('POST', '/console/v1/audiences/get', acme, {
        instance_id: 'acme',
        search_term: suffix,
        archived: true,
      }),
    ]);
    expect(live.body).toMatchObject({ audiences: [], total: 0, has_more: false });
    expect((gone.body.audiences as { id: string }[]).map((a) => a.id)).toEqual([audienceId]);
    expect(gone.body).toMatchObject({ total: 1, offset: 0, next_offset: 1, has_more: false });
    expect(await auditOf('acme', acme)).toContainEqual(
      expect.objectContaining({
        action: 'audience.archive',
        target: `audience:${audienceId}`,
        details: { name },
      }),
    );
  });
});
