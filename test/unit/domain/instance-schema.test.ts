import { describe, expect, it } from '@jest/globals';
import {
  getInstanceSchema,
  InstanceSchemaRequest,
} from '../../../shared/domain/fields/instance-schema.js';
import { ActivityDefinition } from '../../../shared/domain/instance-config.js';
import { testTenant } from '../fixtures.js';

const tenant = testTenant({
  person_fields: [{ id: 'bol:cm:vip', name: 'VIP' }],
  organization_fields: [{ id: 'txt:oc:notes', name: 'Notes' }],
  activities: [
    ActivityDefinition.parse({
      id: 'act:cm:paid',
      name: 'Paid',
      attributes: [
        { id: 'int:cm:amount', name: 'Amount', kind: 'decimal' },
        { id: 'str:cm:link', name: 'Receipt', kind: 'link' },
      ],
    }),
  ],
});

describe('getInstanceSchema', () => {
  it('describes the instance by namespace, from its configuration', () => {
    const { namespaces } = getInstanceSchema(InstanceSchemaRequest.parse({}), tenant);
    expect(Object.keys(namespaces)).toEqual(['', 'o', 'cm', 'oc']);
    expect(namespaces.cm?.fields).toEqual({
      'bol:cm:vip': {
        id: 'bol:cm:vip',
        name: 'VIP',
        display_type: 'bool',
        liquid_name: 'people.custom.vip',
      },
      'act:cm:paid': {
        id: 'act:cm:paid',
        name: 'Paid',
        display_type: 'activity',
        attributes: [
          { id: 'int:cm:amount', name: 'Amount', display_type: 'decimal' },
          { id: 'str:cm:link', name: 'Receipt', display_type: 'link' },
        ],
      },
    });
    expect(namespaces.oc).toEqual({
      id: 'oc',
      org: true,
      fields: {
        'txt:oc:notes': {
          id: 'txt:oc:notes',
          name: 'Notes',
          display_type: 'large_text',
          liquid_name: 'account.custom.notes',
        },
      },
    });
    // Built-in organization fields are named as the real API names them.
    expect(namespaces.o?.fields['str:o:name']).toEqual({
      id: 'str:o:name',
      name: 'Name',
      display_type: 'text',
      liquid_name: 'account.name',
    });
    expect(namespaces.o?.fields['str:o:postal']).toMatchObject({
      liquid_name: 'account.postal-code',
    });
    const builtIn = namespaces['']?.fields ?? {};
    expect(builtIn['str::person_id']).toEqual({
      id: 'str::person_id',
      name: 'Person ID',
      display_type: 'text',
      liquid_name: 'people.id',
      read_only: true,
    });
    // Write-only context messages have no template variable.
    expect(builtIn['str::u-ctx']).not.toHaveProperty('liquid_name');
    // The person's organization, as recorded (`idt::o`, `people.account`).
    expect(builtIn['idt::o']).toMatchObject({
      id: 'idt::o',
      read_only: true,
      display_type: 'id',
      liquid_name: 'people.account',
    });
    // Subscribing and audience activities are templates, as recorded; email ones are not.
    expect(builtIn['act::u-all']).toMatchObject({
      display_type: 'activity_template',
      attributes: [{ id: 'str::u-ctx', display_type: 'text' }],
    });
    expect(builtIn['act::enter-audience']).toMatchObject({
      display_type: 'activity_template',
      attributes: [{ id: 'idt::a' }, { id: 'str::name' }],
    });
    expect(builtIn['act::o']).toMatchObject({ display_type: 'activity' });
  });

  it('answers the namespaces asked, once each, leaving out unknown ones', () => {
    const { namespaces } = getInstanceSchema({ namespaces: ['o', 'hs', 'o', '__proto__'] }, tenant);
    expect(Object.keys(namespaces)).toEqual(['o']);
    expect(namespaces.o?.org).toBe(true);
  });
});
