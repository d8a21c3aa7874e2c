import { z } from 'zod';
import { AudienceCreateRequest, MAX_AUDIENCES } from './audiences/audience.js';
import { ValidationError } from './errors.js';
import { FieldCatalog, CUSTOM_FIELD_TYPES, MAX_CUSTOM_FIELDS } from './fields/field-catalog.js';
import { compileFilter } from './filters/filter.js';
import {
  DISPLAY_TYPE_NAMES,
  DISPLAY_TYPES,
  MAX_OPTIONS,
  MAX_TRACKED_FIELDS,
  type CustomFieldConfig,
  type DisplayType as DisplayTypeName,
} from './fields/custom-fields.js';
import { isCustomFieldName, parseFieldId, type FieldType } from './fields/field-id.js';
import { ID_PATTERN } from './ids.js';
import { REGIONS } from './regions.js';
import { TIME_ZONES } from './timezones.js';
import { parseWith } from './validation.js';

/**
 * The instance-configuration file (DESIGN.md, Instance configuration as code): instances,
 * their data sources (API keys and merge preferences), custom fields, activity definitions
 * and email templates. Unknown members are refused, so that a typo is an error, not a silent
 * no-op; every error names the path of the bad entry, e.g. `instances[0].person_fields[3].id`.
 */

export const PLANS = ['free', 'professional', 'business', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

/** Attribute kinds of activity definitions (API.md, Attribute types) and the field type of each. */
export const ATTRIBUTE_KINDS = {
  text: 'str',
  link: 'str',
  long_text: 'txt',
  number: 'int',
  decimal: 'int',
  currency: 'int',
  date: 'dtz',
  datetime: 'tme',
  boolean: 'bol',
  phone: 'phn',
  // The real API's other attribute display types.
  email: 'str',
  price: 'int',
  single_select: 'str',
  multi_select: 'sst',
  object: 'obj',
} as const satisfies Record<string, FieldType>;
export type AttributeKind = keyof typeof ATTRIBUTE_KINDS;

const DEFAULT_KIND: Partial<Record<FieldType, AttributeKind>> = {
  str: 'text',
  txt: 'long_text',
  int: 'number',
  dtz: 'date',
  tme: 'datetime',
  bol: 'boolean',
  phn: 'phone',
  sst: 'multi_select',
  obj: 'object',
};

const name = z.string().trim().min(1).max(255);
const hexId = z.string().regex(ID_PATTERN, 'expected 24 lowercase hexadecimal characters');

/**
 * What is wrong with a data source's merge keys (`at`: the index of the key, when one is):
 * `str::email`, `str::ei`, custom fields declared unique, or `str::person_id` alone.
 */
export function mergeByProblems(
  mergeBy: readonly string[],
  uniqueFields: ReadonlySet<string>,
  people: FieldCatalog,
): { at: number[]; message: string }[] {
  if (mergeBy.includes('str::person_id')) {
    return mergeBy.length === 1
      ? []
      : [{ at: [], message: 'str::person_id must be the only merge field' }];
  }
  const problems = mergeBy.flatMap((id, j) => {
    if ((BUILT_IN_MERGE_KEYS as readonly string[]).includes(id) || uniqueFields.has(id)) return [];
    const known = people.get(id) !== undefined;
    return [
      {
        at: [j],
        message: `"${id}" cannot be a merge field: ${
          known
            ? 'its values are not unique per instance (merge keys are str::email, str::ei, str::person_id alone, and custom fields declared "unique": true)'
            : 'it is not a person field of this instance'
        }`,
      },
    ];
  });
  if (mergeBy.length === 2 && mergeBy[0] === mergeBy[1]) {
    problems.push({ at: [], message: 'the two merge fields must differ' });
  }
  return problems;
}

export const DataSource = z.strictObject({
  name: z.string().trim().min(1).max(100),
  /**
   * A key given in the file (local and test use; `admin key create` mints real ones): at
   * least 32 characters, so that it cannot be guessed in any number of tries.
   */
  api_key: z
    .string()
    .min(
      32,
      'expected an API key of at least 32 characters (npm run admin -- key create mints one)',
    )
    .max(256)
    .optional(),
  merge_by: z.array(z.string()).min(1).max(2).default(['str::email']),
  merge_strategy: z.union([z.literal(1), z.literal(2), z.literal(3)]).default(2),
  find_strategy: z.union([z.literal(0), z.literal(1), z.literal(2)]).default(0),
});

/**
 * A custom field. `unique: true` (person `str`/`int` fields only) makes its values unique per
 * instance and the field a merge key: applying the configuration claims the values people
 * already hold first (see `key-fields.ts`), and the field can be merged by once that is done.
 */
const CustomField = z.strictObject({
  id: z.string(),
  name,
  unique: z.boolean().optional(),
  /** How the field reads, as the real API's custom fields have it (default: from its type). */
  display_type: z.enum(DISPLAY_TYPE_NAMES).optional(),
  /** The options of a select field. */
  values: z.array(z.string().trim().min(1).max(255)).max(MAX_OPTIONS).optional(),
  /** Changes of the field are recorded as activities (person fields). */
  track_changes: z.boolean().optional(),
});
/** A custom field as stored: the file's, or one created through the API (and when). */
const StoredCustomField = CustomField.extend({
  source: z.literal('api').optional(),
  created_at: z.string().optional(),
});

/** Where a unique field stands: its values being claimed, or a merge key. Kept by `apply`. */
export const KEY_FIELD_STATES = ['claiming', 'active'] as const;
export type KeyFieldState = (typeof KEY_FIELD_STATES)[number];

/** The merge keys every instance has; custom fields join them by being declared unique. */
export const BUILT_IN_MERGE_KEYS = ['str::email', 'str::ei'] as const;

const Attribute = z.strictObject({
  id: z.string(),
  name,
  kind: z.enum(Object.keys(ATTRIBUTE_KINDS) as [AttributeKind, ...AttributeKind[]]).optional(),
});

export const ActivityDefinition = z.strictObject({
  // `act:cm:` people's activities; `act:oc:` accounts' (organizations'), recorded by
  // `POST /v1/accounts/activities/create`.
  id: z
    .string()
    .regex(
      /^act:(?:cm|oc):[a-z0-9]+(?:-[a-z0-9]+)*$/,
      'expected act:cm:<kebab-case-name> (people) or act:oc:<kebab-case-name> (accounts)',
    ),
  name,
  icon: z.string().max(64).optional(),
  display_text: z.string().max(1000).optional(),
  attributes: z.array(Attribute).max(100).default([]),
  map_to_crm: z.record(z.string(), z.string()).optional(),
  conversion_value: z.boolean().default(false),
  track_as_touch: z.boolean().default(false),
});

/**
 * How the real API's activity feeds show an activity (`display_style` of definitions made in
 * its shape): the name alone, with one attribute, or a template of attributes.
 */
export const DisplayStyle = z.object({
  type: z.enum(['activity', 'activity_attribute', 'activity_template']),
  title: z.string().max(1000).optional(),
  attribute_name: z.string().max(255).optional(),
  attribute_field_id: z.string().max(255).optional(),
  template: z.string().max(1000).optional(),
});

/**
 * A definition as stored: the file's shape, and what a definition made in the real API's
 * shape adds (its feed settings, the display type of each attribute, when it was made and
 * changed, and whether it was archived by `definitions/activity/delete`).
 */
export const StoredActivityDefinition = ActivityDefinition.extend({
  attributes: z
    .array(Attribute.extend({ display_type: z.string().max(32).optional() }))
    .max(100)
    .default([]),
  filterable: z.boolean().optional(),
  visible_in_feeds: z.boolean().optional(),
  display_style: DisplayStyle.optional(),
  source: z.literal('api').optional(),
  created_at: z.string().optional(),
  edited_at: z.string().optional(),
  archived_at: z.string().optional(),
});
export type StoredActivityDefinition = z.infer<typeof StoredActivityDefinition>;

const templateFields = {
  id: hexId,
  name: z.string().max(255).optional(),
  subject: z.string().max(998).optional(),
  html_body: z.string().max(350_000).optional(),
  from_email: z.string().max(254).optional(),
  from_name: z.string().max(255).optional(),
  reply_to: z.string().max(254).optional(),
  email_name: z.string().max(255).optional(),
};

const Campaign = z.strictObject({ ...templateFields, status: z.enum(['draft', 'sent']) });
const Asset = z.strictObject({ ...templateFields, status: z.enum(['draft', 'published']) });

/**
 * Per API key (docs/api.md, Rate limits): `requests_per_second` sustained, bursts of up to
 * `burst` requests. Absent: `DEFAULT_RATE_LIMIT` (rate-limit.ts), so that a change of the
 * default reaches every instance that sets none.
 */
export const MAX_REQUESTS_PER_SECOND = 10_000;
export const MAX_BURST = 100_000;
export const RateLimitConfig = z
  .strictObject({
    requests_per_second: z
      .int('expected a whole number of requests per second')
      .min(1, 'expected at least 1 request per second')
      .max(MAX_REQUESTS_PER_SECOND, `expected at most ${MAX_REQUESTS_PER_SECOND}`),
    burst: z
      .int('expected a whole number of requests')
      .min(1, 'expected at least 1 request')
      .max(MAX_BURST, `expected at most ${MAX_BURST}`),
  })
  .refine((limit) => limit.burst >= limit.requests_per_second, {
    path: ['burst'],
    message:
      'expected at least requests_per_second (a key may always make one second of requests at once)',
  });
export type RateLimitConfig = z.infer<typeof RateLimitConfig>;

const InstanceShape = z.strictObject({
  id: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'expected lowercase letters, digits and dashes'),
  name,
  region: z.enum(REGIONS).default('default'),
  plan: z.enum(PLANS).default('free'),
  /** The zone of a `dtz` date sent without one (one of the spec's time zones; absent: UTC). */
  timezone: z
    .string()
    .refine((zone) => TIME_ZONES.has(zone), 'expected one of the time zones of the API')
    .optional(),
  transactional_email: z.boolean().default(false),
  sending_domains: z
    .array(z.string().regex(/^(?=.{1,253}$)([a-z0-9-]+\.)+[a-z]{2,}$/i, 'expected a domain name'))
    .default([]),
  data_sources: z.array(DataSource).default([]),
  rate_limit: RateLimitConfig.optional(),
  person_fields: z.array(CustomField).max(MAX_CUSTOM_FIELDS).default([]),
  organization_fields: z.array(CustomField).max(MAX_CUSTOM_FIELDS).default([]),
  activities: z.array(ActivityDefinition).default([]),
  campaigns: z.array(Campaign).default([]),
  assets: z.array(Asset).default([]),
  /**
   * Audiences the apply makes or brings up to date, matched by name without case; audiences
   * made through the API, and ones no longer in the file, are left alone (docs/audiences.md).
   */
  audiences: z.array(AudienceCreateRequest).max(MAX_AUDIENCES).default([]),
});

const Instance = InstanceShape.superRefine(checkInstance);

/**
 * An instance as stored in the config table and read by the API: the file's shape without
 * plaintext keys and templates (they are items of their own).
 */
export const StoredInstance = InstanceShape.omit({
  campaigns: true,
  assets: true,
  audiences: true,
}).extend({
  /** `source: "api"`: made outside the file (the console); `apply` keeps it. */
  data_sources: z.array(
    DataSource.omit({ api_key: true }).extend({ source: z.literal('api').optional() }),
  ),
  person_fields: z.array(StoredCustomField).default([]),
  organization_fields: z.array(StoredCustomField).default([]),
  activities: z.array(StoredActivityDefinition).default([]),
  /** Unique fields and where each stands (absent: none). Written by `apply`, not the file. */
  key_fields: z.record(z.string(), z.enum(KEY_FIELD_STATES)).optional(),
  /**
   * Custom fields deleted through the API (`instances/custom-field/delete`), by ID, with when:
   * their IDs stay reserved (a create of the same name is refused) unless a file names them.
   */
  deleted_fields: z.record(z.string(), z.string()).optional(),
});
export type StoredInstance = z.infer<typeof StoredInstance>;
export const StoredTemplate = z.union([Campaign, Asset]);

export const ConfigurationFile = z
  .strictObject({ instances: z.array(Instance) })
  .superRefine((file, ctx) => {
    duplicates(file.instances, (instance) => instance.id, ['instances'], 'id', ctx);
    const keys = file.instances.flatMap((instance, i) =>
      instance.data_sources.map((source, j) => ({ key: source.api_key, path: [i, j] })),
    );
    const seen = new Set<string>();
    for (const { key, path } of keys) {
      if (key === undefined) continue;
      if (seen.has(key)) {
        ctx.addIssue({
          code: 'custom',
          path: ['instances', path[0] ?? 0, 'data_sources', path[1] ?? 0, 'api_key'],
          message: 'the same api_key is given to another data source',
        });
      }
      seen.add(key);
    }
  });

export type ConfigurationFile = z.infer<typeof ConfigurationFile>;
export type InstanceConfig = z.infer<typeof Instance>;
export type DataSourceConfig = z.infer<typeof DataSource>;
export type ActivityDefinitionConfig = z.infer<typeof ActivityDefinition>;
export type CampaignConfig = z.infer<typeof Campaign>;
export type AssetConfig = z.infer<typeof Asset>;

type Ctx = z.RefinementCtx;
type Path = (string | number)[];

function duplicates<T>(
  items: readonly T[],
  key: (item: T) => string,
  path: Path,
  member: string,
  ctx: Ctx,
): void {
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const value = key(item);
    if (seen.has(value)) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, index, member],
        message: `duplicate "${value}"`,
      });
    }
    seen.add(value);
  });
}

function checkCustomField(
  field: CustomFieldConfig,
  namespace: 'cm' | 'oc',
  path: Path,
  ctx: Ctx,
): void {
  const parsed = parseFieldId(field.id);
  let message: string | undefined;
  if ('problem' in parsed) message = parsed.problem;
  else if (parsed.namespace !== namespace) message = `expected a field in namespace "${namespace}"`;
  else if (!CUSTOM_FIELD_TYPES.includes(parsed.type))
    message = `type "${parsed.type}" is not allowed`;
  else if (!isCustomFieldName(parsed.name)) message = 'expected a kebab-case name';
  if (message) {
    ctx.addIssue({ code: 'custom', path: [...path, 'id'], message });
    return;
  }
  const type = field.id.split(':')[0];
  const rule = field.display_type
    ? DISPLAY_TYPES[field.display_type as DisplayTypeName]
    : undefined;
  const issue = (member: string, text: string) => {
    ctx.addIssue({ code: 'custom', path: [...path, member], message: text });
  };
  if (rule && rule.type !== type) {
    issue('display_type', `a ${field.display_type} field's ID starts with "${rule.type}:"`);
  }
  const select = rule !== undefined && 'select' in rule;
  if (select && (field.values ?? []).length === 0)
    issue('values', 'a select field needs its options');
  if (!select && field.values !== undefined) {
    issue('values', 'only single_select and multi_select fields have options');
  }
  if (field.track_changes && (namespace === 'oc' || type === 'sst')) {
    issue('track_changes', 'organization and multi_select fields cannot track changes');
  }
}

function checkInstance(instance: z.infer<typeof InstanceShape>, ctx: Ctx): void {
  duplicates(instance.data_sources, (s) => s.name, ['data_sources'], 'name', ctx);
  duplicates(instance.person_fields, (f) => f.id, ['person_fields'], 'id', ctx);
  duplicates(instance.organization_fields, (f) => f.id, ['organization_fields'], 'id', ctx);
  duplicates(instance.activities, (a) => a.id, ['activities'], 'id', ctx);
  duplicates(instance.campaigns, (c) => c.id, ['campaigns'], 'id', ctx);
  duplicates(instance.assets, (a) => a.id, ['assets'], 'id', ctx);
  duplicates(instance.audiences, (a) => a.name.toLowerCase(), ['audiences'], 'name', ctx);

  if (instance.person_fields.filter((field) => field.track_changes).length > MAX_TRACKED_FIELDS) {
    ctx.addIssue({
      code: 'custom',
      path: ['person_fields'],
      message: `at most ${MAX_TRACKED_FIELDS} fields can track changes`,
    });
  }
  instance.person_fields.forEach((field, i) => {
    checkCustomField(field, 'cm', ['person_fields', i], ctx);
    const type = field.id.split(':')[0];
    if (field.unique && type !== 'str' && type !== 'int') {
      ctx.addIssue({
        code: 'custom',
        path: ['person_fields', i, 'unique'],
        message: 'only str and int fields can be unique (merge keys)',
      });
    }
  });
  instance.organization_fields.forEach((field, i) => {
    checkCustomField(field, 'oc', ['organization_fields', i], ctx);
    if (field.unique) {
      ctx.addIssue({
        code: 'custom',
        path: ['organization_fields', i, 'unique'],
        message:
          'organization merge keys are str:o:name and str:o:website; custom organization fields cannot be unique',
      });
    }
  });
  let people: FieldCatalog;
  try {
    people = FieldCatalog.forPerson(instance.person_fields);
  } catch {
    return; // a bad custom field, reported above
  }
  instance.audiences.forEach((audience, i) => {
    for (const member of ['filter', 'exit_filter'] as const) {
      if (!audience[member]) continue;
      try {
        compileFilter(audience[member], { fields: people }, member);
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        ctx.addIssue({ code: 'custom', path: ['audiences', i, member], message: error.message });
      }
    }
  });

  const unique = new Set(instance.person_fields.filter((f) => f.unique).map((f) => f.id));
  instance.data_sources.forEach((source, i) => {
    for (const problem of mergeByProblems(source.merge_by, unique, people)) {
      ctx.addIssue({
        code: 'custom',
        path: ['data_sources', i, 'merge_by', ...problem.at],
        message: problem.message,
      });
    }
  });

  instance.activities.forEach((activity, i) => {
    checkActivityDefinition(activity, people, ['activities', i], ctx);
  });
}

/**
 * The checks of one activity definition beyond its shape: attribute IDs and kinds agree,
 * and `map_to_crm` maps attributes to person fields of a compatible type.
 */
export function checkActivityDefinition(
  activity: ActivityDefinitionConfig,
  people: FieldCatalog,
  at: Path,
  ctx: Ctx,
): void {
  duplicates(activity.attributes, (a) => a.id, [...at, 'attributes'], 'id', ctx);
  const attributeTypes = new Map<string, FieldType>();
  activity.attributes.forEach((attribute, j) => {
    const path = [...at, 'attributes', j];
    const parsed = parseFieldId(attribute.id);
    if ('problem' in parsed) {
      ctx.addIssue({ code: 'custom', path: [...path, 'id'], message: parsed.problem });
      return;
    }
    if (parsed.namespace !== 'cm' || !isCustomFieldName(parsed.name)) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, 'id'],
        message: 'expected an attribute ID of the form type:cm:kebab-case-name',
      });
      return;
    }
    const kind = attribute.kind ?? DEFAULT_KIND[parsed.type];
    if (!kind || ATTRIBUTE_KINDS[kind] !== parsed.type) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, attribute.kind ? 'kind' : 'id'],
        message: `attribute type "${parsed.type}" does not fit kind "${kind ?? 'none'}"`,
      });
      return;
    }
    attributeTypes.set(attribute.id, parsed.type);
  });
  for (const [attributeId, personFieldId] of Object.entries(activity.map_to_crm ?? {})) {
    const path = [...at, 'map_to_crm', attributeId];
    const type = attributeTypes.get(attributeId);
    const field = people.get(personFieldId);
    if (!type) {
      ctx.addIssue({ code: 'custom', path, message: 'is not an attribute of this activity' });
    } else if (!field || !field.writable || !field.stored) {
      ctx.addIssue({ code: 'custom', path, message: `"${personFieldId}" is not a person field` });
    } else if (field.type !== type && !(type === 'str' && field.type === 'txt')) {
      ctx.addIssue({
        code: 'custom',
        path,
        message: `attribute type "${type}" cannot be written to "${personFieldId}" (${field.type})`,
      });
    }
  }
}

/** Validates a parsed configuration file; the error lists every problem with its path. */
export function parseConfigurationFile(input: unknown): ConfigurationFile {
  return parseWith(ConfigurationFile, input, 'configuration');
}
