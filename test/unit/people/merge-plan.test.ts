import { describe, expect, it } from '@jest/globals';
import { FieldCatalog } from '../../../shared/domain/fields/field-catalog.js';
import {
  findPersonId,
  planCreate,
  planUpdate,
  prepareRecord,
  type PreparedRecord,
} from '../../../shared/domain/people/merge-plan.js';
import { findRecordMatch } from '../../../shared/domain/merge/merge-engine.js';
import type { MergeOptions } from '../../../shared/domain/people/merge-request.js';
import type { Person } from '../../../shared/domain/people/person.js';
import { searchTokens } from '../../../shared/domain/people/person-index.js';
import type { Tenant } from '../../../shared/domain/tenancy.js';

const tenant = {
  personFields: FieldCatalog.forPerson([{ id: 'str:cm:colour', name: 'Colour' }]),
} as unknown as Tenant;

const options: MergeOptions = {
  mergeBy: ['str::ei', 'str::email'],
  byId: false,
  strategy: 2,
  findStrategy: 0,
  skipNonExisting: false,
  keyFields: ['str::email', 'str::ei'],
};

const isStored = (id: string) => tenant.personFields.get(id)?.stored ?? false;

function prepare(record: unknown, opts: MergeOptions = options): PreparedRecord {
  const prepared = prepareRecord(record, 0, opts, tenant);
  if ('error' in prepared) throw new Error(prepared.error);
  return prepared;
}

const person: Person = {
  id: 'aaaaaaaaaaaaaaaaaaaaaaaa',
  fields: { 'str::email': 'a@x.test', 'str::first': 'Old', 'bol::p': true, 'bol::sp': false },
  tags: ['vip'],
  created_at: '2024-01-01T00:00:00.000Z',
  updated_at: '2024-01-01T00:00:00.000Z',
};

/** The plan of `record` for `person` under strategy 2 (overwrite). */
const overwrite = (record: unknown) =>
  planUpdate(person, prepare(record), 2, options.keyFields, 'now', isStored);

describe('findPersonId', () => {
  const owners = new Map([
    ['str::email\u0000a@x.test', 'by-email'],
    ['str::ei\u0000E1', 'by-ei'],
  ]);
  const owner = (field: string, value: string) => owners.get(`${field}\u0000${value}`);

  it.each([
    [0, { 'str::ei': 'E1', 'str::email': 'a@x.test' }, 'by-ei'],
    [0, { 'str::ei': 'E2', 'str::email': 'A@x.test' }, 'by-email'],
    [1, { 'str::ei': 'E2', 'str::email': 'a@x.test' }, undefined],
    [1, { 'str::email': 'a@x.test' }, 'by-email'],
    [0, { 'str::ei': 'E2', 'str::email': 'b@x.test' }, undefined],
    // find_strategy 2 ("all"): one person must hold every value the record gives.
    [2, { 'str::ei': 'E1', 'str::email': 'a@x.test' }, undefined],
    [2, { 'str::ei': 'E2', 'str::email': 'a@x.test' }, undefined],
    [2, { 'str::ei': 'E1' }, 'by-ei'],
    [2, { 'str::email': 'A@x.test' }, 'by-email'],
    [2, { 'str::ei': 'E2', 'str::email': 'b@x.test' }, undefined],
  ] as const)('find_strategy %i with %p finds %p', (findStrategy, fields, expected) => {
    expect(findPersonId(prepare({ fields }), { ...options, findStrategy }, owner)).toBe(expected);
  });
});

describe('findPersonId with find_strategy 2', () => {
  it('finds the person who holds both values, and names both as what it was found by', () => {
    const holders = new Map([
      ['str::email\u0000a@x.test', 'both'],
      ['str::ei\u0000E1', 'both'],
    ]);
    const owner = (field: string, value: string) => holders.get(`${field}\u0000${value}`);
    const record = prepare({ fields: { 'str::ei': 'E1', 'str::email': 'a@x.test' } });
    expect(findRecordMatch(record, { ...options, findStrategy: 2 }, owner)).toEqual({
      id: 'both',
      fields: ['str::ei', 'str::email'],
    });
    expect(findRecordMatch(record, { ...options, findStrategy: 0 }, owner)).toEqual({
      id: 'both',
      fields: ['str::ei'],
    });
  });
});

describe('planCreate', () => {
  it('subscribes to email by default, not to SMS, records only the email permission and keeps its context', () => {
    const plan = planCreate(
      prepare({ fields: { 'str::email': 'n@x.test', 'str::s-ctx': 'Signed up' } }),
      'id',
      'now',
      isStored,
    );
    expect(plan.person.fields).toEqual({
      'str::email': 'n@x.test',
      'bol::p': true,
      'bol::sp': false,
      // The latest context message is kept with the person, selectable as the real API's is.
      'str::s-ctx': 'Signed up',
    });
    expect(plan.activities).toEqual([
      { field_id: 'act::s-all', attr: { 'str::s-ctx': 'Signed up' } },
    ]);
    expect(plan.subscribed).toBe(true);
  });

  it('records an SMS permission sent explicitly', () => {
    const plan = planCreate(
      prepare({ fields: { 'str::email': 'n@x.test', 'bol::p': false, 'bol::sp': true } }),
      'id',
      'now',
      isStored,
    );
    expect(plan.activities.map((a) => a.field_id)).toEqual(['act::u-all', 'act::ois-all']);
    expect(plan.subscribed).toBe(false);
  });
});

describe('planUpdate', () => {
  it('strategy 1 fills only empty fields and ignores null', () => {
    const plan = planUpdate(
      person,
      prepare({
        fields: {
          'str::email': 'a@x.test',
          'str::first': 'New',
          'str::last': 'L',
          'str::postal': null,
        },
      }),
      1,
      options.keyFields,
      'now',
      isStored,
    );
    expect(plan?.sets).toEqual({});
    expect(plan?.setsIfAbsent).toEqual({ 'str::last': 'L' });
    expect(plan?.removes).toEqual([]);
  });

  it('strategy 2 overwrites, clears null, and honours clear_fields', () => {
    const plan = planUpdate(
      person,
      prepare({
        fields: {
          'str::email': 'a@x.test',
          'str::first': null,
          'str:cm:colour': 'red',
          'str::last': 'L',
        },
        clear_fields: { 'str::last': false },
      }),
      2,
      options.keyFields,
      'now',
      isStored,
    );
    expect(plan?.sets).toEqual({ 'str:cm:colour': 'red' });
    expect(plan?.setsIfAbsent).toEqual({ 'str::last': 'L' });
    expect(plan?.removes).toEqual(['str::first']);
    expect(plan?.after.fields).toEqual({
      'str::email': 'a@x.test',
      'bol::p': true,
      'bol::sp': false,
      'str:cm:colour': 'red',
      'str::last': 'L',
    });
  });

  it('conditions a permission change on the old value and counts the subscriber', () => {
    const plan = planUpdate(
      person,
      prepare({ fields: { 'str::email': 'a@x.test', 'bol::p': false } }),
      2,
      options.keyFields,
      'now',
      isStored,
    );
    expect(plan?.expected).toEqual({ 'bol::p': true });
    expect(plan?.activities).toEqual([
      { field_id: 'act::u-all', attr: { 'str::u-ctx': 'Unsubscribed via API' } },
    ]);
    expect(plan?.subscriberDelta).toBe(-1);
  });

  it('moves key claims when a key value changes', () => {
    const plan = overwrite({ fields: { 'str::email': 'B@x.test', 'str::ei': 'E9' } });
    expect([...(plan?.claimsReleased ?? [])]).toEqual([['str::email', 'a@x.test']]);
    expect([...(plan?.claimsAdded ?? [])]).toEqual([
      ['str::email', 'b@x.test'],
      ['str::ei', 'E9'],
    ]);
    expect(plan?.expected).toEqual({ 'str::email': 'a@x.test', 'str::ei': undefined });
  });

  it('carries the tokens of the indexes a name change moves, and not the email index', () => {
    const plan = overwrite({ fields: { 'str::email': 'a@x.test', 'str::last': 'New' } });
    // "first last" and "last first" move; the email's token is left to whoever changes it.
    expect(plan?.tokens).toEqual({
      first: searchTokens({ ...person.fields, 'str::last': 'New' }).first,
      last: searchTokens({ ...person.fields, 'str::last': 'New' }).last,
    });
    expect(plan?.tokens?.first).not.toBe(searchTokens(person.fields).first);
    expect(plan?.expected).toEqual({ 'str::first': 'Old' });
    const email = overwrite({ fields: { 'str::email': 'b@x.test' } });
    expect(email?.tokens).toEqual({ email: searchTokens({ 'str::email': 'b@x.test' }).email });
  });

  it('adds and removes tags, and returns nothing when nothing changes', () => {
    const plan = planUpdate(
      person,
      prepare({ fields: { 'str::email': 'a@x.test' }, tags: ['new', 'vip'], unset_tags: ['vip'] }),
      2,
      options.keyFields,
      'now',
      isStored,
    );
    expect(plan?.addTags).toEqual(['new']);
    expect(plan?.removeTags).toEqual(['vip']);
    expect(
      planUpdate(
        person,
        prepare({ fields: { 'str::email': 'a@x.test ', 'str::first': 'Old' } }),
        2,
        options.keyFields,
        'now',
        isStored,
      ),
    ).toBeUndefined();
  });
});

describe('prepareRecord', () => {
  it.each([
    [{ fields: { 'str::first': 'x' } }, 'people[0].fields: str::email or str::ei is required'],
    [
      { fields: { 'str::email': 'a@x.test', 'str::person_id': 'aaaaaaaaaaaaaaaaaaaaaaaa' } },
      /str::person_id: is read-only/,
    ],
    [
      { fields: { 'str::email': 'a@x.test' }, clear_fields: { 'str::nope': true } },
      /clear_fields\.str::nope: is not a person field/,
    ],
    [
      { fields: { 'str::email': 'a@x.test' }, clear_fields: { 'str::first': 'yes' } },
      /clear_fields\.str::first: expected true or false/,
    ],
    [{ fields: [] }, /^people\[0\]\.fields: /],
    [
      { fields: { 'idt::o': 'aaaaaaaaaaaaaaaaaaaaaaaa', 'str::email': 'a@x.test' } },
      'people[0].fields.idt::o: is read-only',
    ],
  ])('refuses %p', (record, message) => {
    const prepared = prepareRecord(record, 0, options, tenant);
    expect('error' in prepared && prepared.error).toMatch(message);
  });

  it('requires a person ID when merging by ID', () => {
    const byId = { ...options, mergeBy: ['str::person_id'], byId: true };
    expect(prepareRecord({ fields: { 'str::first': 'x' } }, 0, byId, tenant)).toEqual({
      index: 0,
      error:
        'people[0].fields.str::person_id: expected the ID of a person (24 hexadecimal characters)',
    });
    expect(
      prepare({ fields: { 'str::person_id': 'aaaaaaaaaaaaaaaaaaaaaaaa' } }, byId).recordId,
    ).toBe('aaaaaaaaaaaaaaaaaaaaaaaa');
  });
});
