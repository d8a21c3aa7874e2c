import { z } from 'zod';
import { compileDefinition } from '../activities/activity-definitions.js';
import { EMAIL_ACTIVITIES } from '../email/email-activities.js';
import { liquidName } from '../email/liquid.js';
import { ATTRIBUTE_KINDS, type AttributeKind } from '../instance-config.js';
import { ENTER_ACTIVITY, EXIT_ACTIVITY } from '../audiences/membership.js';
import { FIELD_CHANGED, PERMISSION_ACTIVITIES } from '../people/person.js';
import type { Tenant } from '../tenancy.js';
import type { FieldDefinition } from './field-catalog.js';
import { TYPE_DISPLAY_TYPES } from './custom-fields.js';
import { parseFieldId, type FieldNamespace, type FieldType } from './field-id.js';

/**
 * `POST /v1/instance-schema/get`: the fields and activities of the instance, by namespace,
 * from its configuration (docs/api.md, Beyond the spec). `[]` (or no member) asks for every
 * namespace; a namespace the instance has none of (the real API's integration namespaces,
 * `sf`, `hs`, …) is left out of the answer rather than refused, so that a client written
 * for an instance with integrations still gets the rest.
 */
export const InstanceSchemaRequest = z.object({
  namespaces: z
    .array(z.string().max(64, 'expected a namespace ID of at most 64 characters'))
    .max(100, 'expected at most 100 namespaces')
    .default([]),
});
export type InstanceSchemaRequest = z.infer<typeof InstanceSchemaRequest>;

export interface SchemaField {
  id: string;
  name: string;
  display_type: string;
  /** The Liquid variable of transactional email templates, where there is one. */
  liquid_name?: string;
  read_only?: true;
}

/** An activity: `display_type` `activity` or `activity_template`, its attributes in order. */
export interface SchemaActivity extends SchemaField {
  attributes: SchemaField[];
}

export interface SchemaNamespace {
  id: FieldNamespace;
  org?: true;
  fields: Record<string, SchemaField | SchemaActivity>;
}

const FORMAT_DISPLAY_TYPES = { email: 'email', url: 'link', language: 'text' } as const;
/** Attribute kinds (instance configuration) as display types. */
export const KIND_DISPLAY_TYPES: Record<AttributeKind, string> = {
  text: 'text',
  link: 'link',
  long_text: 'large_text',
  number: 'integer',
  decimal: 'decimal',
  currency: 'currency',
  date: 'date',
  datetime: 'time',
  boolean: 'bool',
  phone: 'phone',
  email: 'email',
  price: 'price',
  single_select: 'single_select',
  multi_select: 'multi_select',
  object: 'object',
};

/** Built-in activities the service records itself, with the attributes each carries. */
const BUILT_IN_ACTIVITIES: { id: string; name: string; attributes: [string, string][] }[] = [
  ...Object.values(PERMISSION_ACTIVITIES).map(({ activity, context, text }) => ({
    id: activity,
    name: text.replace(' via API', ''),
    attributes: [[context, 'Context message']] as [string, string][],
  })),
  ...Object.values(EMAIL_ACTIVITIES).map(({ field_id, display }) => ({
    id: field_id,
    name: display,
    attributes: [
      ['str::email-name', 'Email name'],
      ['str::message-id', 'Message ID'],
      ...(field_id === 'act::c' ? [['str::url', 'URL'] as [string, string]] : []),
      ...(field_id === 'act::b' ? [['str::bounce-type', 'Bounce type'] as [string, string]] : []),
    ] as [string, string][],
  })),
  // Recorded when a field with `track_changes` changes (`old` and `new` hold its values).
  { id: FIELD_CHANGED, name: 'Field changed', attributes: [['str::field-id', 'Field']] },
  ...[
    { id: ENTER_ACTIVITY, name: 'Entered audience' },
    { id: EXIT_ACTIVITY, name: 'Exited audience' },
  ].map((activity) => ({
    ...activity,
    attributes: [
      ['idt::a', 'Id'],
      ['str::name', 'Name'],
    ] as [string, string][],
  })),
];

/**
 * Built-in activities the real API names `activity_template` (shown from a template of their
 * attributes, as recorded: subscribing, unsubscribing, entering and leaving audiences).
 */
const TEMPLATE_ACTIVITIES: ReadonlySet<string> = new Set([
  PERMISSION_ACTIVITIES.emailSubscribed.activity,
  PERMISSION_ACTIVITIES.emailUnsubscribed.activity,
  ENTER_ACTIVITY,
  EXIT_ACTIVITY,
]);

function schemaField(field: FieldDefinition, person: boolean): SchemaField {
  const displayType =
    field.displayType ??
    (field.format ? FORMAT_DISPLAY_TYPES[field.format] : TYPE_DISPLAY_TYPES[field.type]);
  // Templates see the fields a person stores (and `people.id`); organization fields and the
  // person's organization are named as the real API names them (`account.<name>`,
  // `people.account`).
  const liquid = !person
    ? field.custom
      ? `account.custom.${liquidName(field)}`
      : `account.${liquidName(field)}`
    : field.id === 'str::person_id'
      ? 'people.id'
      : field.id === 'idt::o'
        ? 'people.account'
        : !field.stored
          ? undefined
          : field.custom
            ? `people.custom.${liquidName(field)}`
            : `people.${liquidName(field)}`;
  return {
    id: field.id,
    name: field.label,
    display_type: displayType,
    ...(liquid ? { liquid_name: liquid } : {}),
    ...(field.writable ? {} : { read_only: true as const }),
  };
}

function attributeField(id: string, name: string, kind?: AttributeKind): SchemaField {
  const parsed = parseFieldId(id);
  const type: FieldType = 'problem' in parsed ? 'str' : parsed.type;
  const displayType =
    kind && ATTRIBUTE_KINDS[kind] === type ? KIND_DISPLAY_TYPES[kind] : TYPE_DISPLAY_TYPES[type];
  return { id, name, display_type: displayType };
}

/** Every namespace the instance has, as the API answers it. */
export function describeInstance(tenant: Tenant): Record<FieldNamespace, SchemaNamespace> {
  const namespaces: Record<FieldNamespace, SchemaNamespace> = {
    '': { id: '', fields: {} },
    o: { id: 'o', org: true, fields: {} },
    cm: { id: 'cm', fields: {} },
    oc: { id: 'oc', org: true, fields: {} },
  };
  for (const field of tenant.personFields.fields) {
    namespaces[field.namespace].fields[field.id] = schemaField(field, true);
  }
  for (const field of tenant.organizationFields.fields) {
    namespaces[field.namespace].fields[field.id] = schemaField(field, false);
  }
  for (const activity of BUILT_IN_ACTIVITIES) {
    namespaces[''].fields[activity.id] = {
      id: activity.id,
      name: activity.name,
      read_only: true,
      display_type: TEMPLATE_ACTIVITIES.has(activity.id) ? 'activity_template' : 'activity',
      attributes: activity.attributes.map(([id, name]) => attributeField(id, name)),
    };
  }
  // Archived definitions (`definitions/activity/delete`) are no longer offered.
  for (const definition of tenant.instance.activities.filter((a) => !a.archived_at)) {
    const compiled = compileDefinition(definition);
    // Accounts' activities (`act:oc:`) are listed with the accounts' custom fields.
    const namespace = definition.id.startsWith('act:oc:') ? namespaces.oc : namespaces.cm;
    namespace.fields[definition.id] = {
      id: definition.id,
      name: definition.name,
      display_type:
        definition.display_style?.type === 'activity_template' ? 'activity_template' : 'activity',
      attributes: definition.attributes
        .filter((attribute) => compiled.attributes.has(attribute.id))
        .map((attribute) => attributeField(attribute.id, attribute.name, attribute.kind)),
    };
  }
  return namespaces;
}

/** The namespaces asked for (all for `[]`), each once, in the order asked. */
export function getInstanceSchema(request: InstanceSchemaRequest, tenant: Tenant) {
  const all = describeInstance(tenant);
  const wanted = request.namespaces.length === 0 ? Object.keys(all) : request.namespaces;
  const namespaces: Record<string, SchemaNamespace> = {};
  for (const id of wanted) {
    if (Object.hasOwn(all, id)) namespaces[id] = all[id as FieldNamespace];
  }
  return { namespaces };
}
