import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { ValidationError } from '../../../shared/domain/errors.js';
import { parseConfigurationFile } from '../../../shared/domain/instance-config.js';

const fixture = JSON.parse(readFileSync('test/fixtures/seed.json', 'utf8')) as {
  instances: Record<string, unknown>[];
};

function withInstance(changes: Record<string, unknown>) {
  return { instances: [{ id: 'acme', name: 'Acme', ...changes }] };
}

function errorOf(input: unknown): ValidationError {
  try {
    parseConfigurationFile(input);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

describe('the instance configuration file', () => {
  it('accepts the shape DESIGN.md gives and fills the defaults', () => {
    const file = parseConfigurationFile(fixture);
    expect(file.instances).toHaveLength(29);
    const globex = file.instances[1];
    expect(globex).toMatchObject({
      id: 'globex',
      region: 'default',
      plan: 'free',
      transactional_email: false,
      person_fields: [],
    });
    expect(globex?.data_sources[0]).toEqual({
      name: 'CRM',
      api_key: 'test-key-32-characters-or-more-globex',
      merge_by: ['str::email'],
      merge_strategy: 2,
      find_strategy: 0,
    });
  });

  it('names the path of a bad custom field ID', () => {
    const fields = [
      { id: 'str:cm:a', name: 'A' },
      { id: 'str:cm:b', name: 'B' },
      { id: 'str:cm:c', name: 'C' },
      { id: 'str:cm:Not_Kebab', name: 'D' },
    ];
    const error = errorOf(withInstance({ person_fields: fields }));
    expect(error.details).toContainEqual({
      field: 'instances[0].person_fields[3].id',
      error: expect.stringMatching(/kebab-case|not a field ID/) as unknown as string,
    });
    expect(error.message).toContain('instances[0].person_fields[3].id');
  });

  it.each([
    [
      { person_fields: [{ id: 'str:oc:x', name: 'X' }] },
      'instances[0].person_fields[0].id',
      /namespace "cm"/,
    ],
    [
      { organization_fields: [{ id: 'int:cm:x', name: 'X' }] },
      'instances[0].organization_fields[0].id',
      /namespace "oc"/,
    ],
    [
      { person_fields: [{ id: 'idt:cm:x', name: 'X' }] },
      'instances[0].person_fields[0].id',
      /not allowed/,
    ],
    [{ region: 'us' }, 'instances[0].region', /./],
    [{ plan: 'gold' }, 'instances[0].plan', /./],
    [{ colour: 'red' }, 'instances[0]', /colour/],
    [
      { data_sources: [{ name: 'W', merge_by: ['str::first', 'str::nope'] }] },
      'instances[0].data_sources[0].merge_by[1]',
      /cannot be a merge field/,
    ],
    [
      { data_sources: [{ name: 'W', merge_by: ['str::person_id', 'str::email'] }] },
      'instances[0].data_sources[0].merge_by',
      /only merge field/,
    ],
    [
      { data_sources: [{ name: 'W', merge_strategy: 4 }] },
      'instances[0].data_sources[0].merge_strategy',
      /./,
    ],
    [
      { data_sources: [{ name: 'W' }, { name: 'W' }] },
      'instances[0].data_sources[1].name',
      /duplicate/,
    ],
    [
      {
        activities: [
          {
            id: 'act:cm:bought',
            name: 'Bought',
            attributes: [{ id: 'int:cm:price', name: 'Price', kind: 'date' }],
          },
        ],
      },
      'instances[0].activities[0].attributes[0].kind',
      /does not fit/,
    ],
    [
      {
        activities: [
          { id: 'act:cm:bought', name: 'Bought', map_to_crm: { 'str:cm:item': 'str::first' } },
        ],
      },
      'instances[0].activities[0].map_to_crm.str:cm:item',
      /not an attribute/,
    ],
    [
      { activities: [{ id: 'bought', name: 'Bought' }] },
      'instances[0].activities[0].id',
      /act:cm:/,
    ],
    [
      { campaigns: [{ id: 'xyz', status: 'draft' }] },
      'instances[0].campaigns[0].id',
      /24 lowercase hexadecimal/,
    ],
    [
      { rate_limit: { requests_per_second: 0, burst: 10 } },
      'instances[0].rate_limit.requests_per_second',
      /at least 1/,
    ],
    [
      { rate_limit: { requests_per_second: 2.5, burst: 10 } },
      'instances[0].rate_limit.requests_per_second',
      /whole number/,
    ],
    [
      { rate_limit: { requests_per_second: 50, burst: 10 } },
      'instances[0].rate_limit.burst',
      /at least requests_per_second/,
    ],
    [
      { rate_limit: { requests_per_second: 50, burst: 1_000_000 } },
      'instances[0].rate_limit.burst',
      /at most 100000/,
    ],
    [{ rate_limit: { requests_per_second: 50 } }, 'instances[0].rate_limit.burst', /./],
    [
      { rate_limit: { requests_per_second: 5, burst: 10, window: 1 } },
      'instances[0].rate_limit',
      /window/,
    ],
  ])('refuses %p at %s', (changes, path, message) => {
    const error = errorOf(withInstance(changes));
    const detail = error.details?.find((d) => d.field === path);
    expect(detail?.error).toMatch(message);
  });

  it('keeps a rate limit given, and leaves it absent (the default applies) otherwise', () => {
    const file = parseConfigurationFile(fixture);
    expect(file.instances.find((i) => i.id === 'ratelimited')?.rate_limit).toEqual({
      requests_per_second: 1,
      burst: 3,
    });
    expect(file.instances.find((i) => i.id === 'globex')?.rate_limit).toBeUndefined();
  });

  it('allows 100 custom fields of each kind and no more', () => {
    const fields = (n: number, ns: string) =>
      Array.from({ length: n }, (_, i) => ({ id: `str:${ns}:field-${i}`, name: `Field ${i}` }));
    expect(() =>
      parseConfigurationFile(
        withInstance({ person_fields: fields(100, 'cm'), organization_fields: fields(100, 'oc') }),
      ),
    ).not.toThrow();
    expect(errorOf(withInstance({ person_fields: fields(101, 'cm') })).details?.[0]?.field).toBe(
      'instances[0].person_fields',
    );
    expect(
      errorOf(withInstance({ organization_fields: fields(101, 'oc') })).details?.[0]?.field,
    ).toBe('instances[0].organization_fields');
  });

  it('refuses duplicate instance IDs and an API key given twice', () => {
    const error = errorOf({
      instances: [
        {
          id: 'a',
          name: 'A',
          data_sources: [{ name: 'X', api_key: 'same-key-32-characters-or-more-x' }],
        },
        {
          id: 'a',
          name: 'B',
          data_sources: [{ name: 'Y', api_key: 'same-key-32-characters-or-more-x' }],
        },
      ],
    });
    expect(error.details?.map((d) => d.field)).toEqual(
      expect.arrayContaining(['instances[1].id', 'instances[1].data_sources[0].api_key']),
    );
  });
});
