import { z } from 'zod';
import { ConflictError, ValidationError } from '../errors.js';
import { DISPLAY_TYPES, fieldNameOf, isDisplayType, kebabName } from '../fields/custom-fields.js';
import { MAX_FIELD_NAME_LENGTH } from '../fields/field-id.js';
import { KIND_DISPLAY_TYPES } from '../fields/instance-schema.js';
import {
  ActivityDefinition,
  ATTRIBUTE_KINDS,
  checkActivityDefinition,
  DisplayStyle,
  StoredActivityDefinition,
  type ActivityDefinitionConfig,
  type AttributeKind,
} from '../instance-config.js';
import type { Tenant } from '../tenancy.js';
import { parseWith } from '../validation.js';

/**
 * Activity definitions through the API: `POST /v1/definitions/activity/create` takes either
 * the real API's shape (`name`, `icon_id`, `display_style`, `attributes[{name, display_type,
 * field_id}]`, …; answered `{"custom_activity": {…}}` as recorded) or this project's
 * configuration shape (`id`, `attributes[{id, name, kind}]`, `map_to_crm`, …; answered
 * `{"activity": …}`): one definition, two input shapes. `PUT …/modify` changes one and
 * `DELETE …/delete` archives one (its recorded activities stay readable; no new ones can be
 * recorded). Each writes the instance's configuration, whose version every function's cache
 * checks, so the definition is usable at once.
 */

/** The body of the configuration shape: one definition, checked like the file's. */
export const ActivityDefinitionRequest = ActivityDefinition;

/** Display types of attributes (the real API's) as the attribute kinds of the configuration. */
const KIND_OF_DISPLAY_TYPE: Record<string, AttributeKind> = {
  text: 'text',
  large_text: 'long_text',
  email: 'email',
  phone: 'phone',
  link: 'link',
  integer: 'number',
  decimal: 'decimal',
  currency: 'currency',
  price: 'price',
  date: 'date',
  time: 'datetime',
  bool: 'boolean',
  single_select: 'single_select',
  multi_select: 'multi_select',
  object: 'object',
};
const ATTRIBUTE_DISPLAY_TYPES = Object.keys(KIND_OF_DISPLAY_TYPE);

const RealAttribute = z.object({
  name: z.string().trim().min(1, 'expected a name').max(255),
  display_type: z.string().min(1, 'expected a display type'),
  /** A person field the attribute's values are written to ("map to CRM"); `do-not-map` or "" for none. */
  field_id: z.string().max(255).optional(),
});

const realMembers = {
  icon_id: z.string().max(64).optional(),
  track_conversion_value: z.boolean().optional(),
  touch: z.boolean().optional(),
  filterable: z.boolean().optional(),
  visible_in_feeds: z.boolean().optional(),
  display_style: DisplayStyle.optional(),
  attributes: z.array(RealAttribute).max(100).optional(),
};

/** The real API's create request (`name` names the definition: `act:cm:<kebab name>`). */
export const CustomActivityRequest = z.object({
  name: z.string().trim().min(1, 'expected a name').max(255),
  ...realMembers,
});
export type CustomActivityRequest = z.infer<typeof CustomActivityRequest>;

/** `PUT /v1/definitions/activity/modify`: the definition by `activity_field_id` (else `name`). */
export const CustomActivityModifyRequest = z
  .object({
    name: z.string().trim().min(1).max(255).optional(),
    activity_field_id: z.string().max(255).optional(),
    /** The real API's lifecycle state: not settable here (ignored). */
    state: z.string().max(64).optional(),
    ...realMembers,
  })
  .refine((body) => body.name !== undefined || body.activity_field_id !== undefined, {
    path: ['activity_field_id'],
    message: 'required (or name): which definition to modify',
  });
export type CustomActivityModifyRequest = z.infer<typeof CustomActivityModifyRequest>;

/** `DELETE /v1/definitions/activity/delete`. */
export const CustomActivityDeleteRequest = z.object({
  activity_field_id: z.string().min(1, 'expected an activity ID').max(255),
});

/** Either create shape: a body with `id` is the configuration's, else the real API's. */
export const AnyActivityDefinitionRequest = z.union([
  ActivityDefinitionRequest,
  CustomActivityRequest,
]);

export interface DefinitionStore {
  /** Adds a definition; false when the instance has one of that ID (archived ones too). */
  addActivityDefinition(instanceId: string, definition: StoredActivityDefinition): Promise<boolean>;
  /** Changes a definition (read afresh); `undefined` when the instance has none of that ID. */
  changeActivityDefinition(
    instanceId: string,
    id: string,
    change: (definition: StoredActivityDefinition) => StoredActivityDefinition,
  ): Promise<StoredActivityDefinition | undefined>;
}

function fail(field: string, problem: string): never {
  throw new ValidationError(`${field}: ${problem}`, [{ field, error: problem }]);
}

const NO_MAPPING = new Set(['', 'do-not-map']);

/** `{{name}}` of the real API's templates as this service's `{{attribute.name}}`. */
function displayTextOf(
  name: string,
  style: z.infer<typeof DisplayStyle> | undefined,
  attributes: StoredActivityDefinition['attributes'],
): string | undefined {
  if (!style || style.type === 'activity') return undefined;
  if (style.type === 'activity_template') {
    if (!style.template) fail('display_style.template', 'an activity_template needs its template');
    return style.template.replace(
      /\{\{\s*(?!attribute\.)([a-z0-9_-]+)\s*\}\}/gi,
      (_, attribute: string) => `{{attribute.${attribute.toLowerCase()}}}`,
    );
  }
  const attribute = attributes.find(
    (a) =>
      (style.attribute_field_id && a.id === style.attribute_field_id) ||
      (style.attribute_name !== undefined && kebabName(style.attribute_name) === kebabName(a.name)),
  );
  if (!attribute) {
    fail(
      'display_style.attribute_name',
      'an activity_attribute display names one of the attributes (attribute_name or attribute_field_id)',
    );
  }
  return `${name}: {{attribute.${attribute.name.toLowerCase().replace(/\s+/g, '_')}}}`;
}

/** The attributes of a real-shape request as stored ones, and their mappings to person fields. */
function attributesOf(
  attributes: z.infer<typeof RealAttribute>[],
  tenant: Tenant,
): Pick<StoredActivityDefinition, 'attributes' | 'map_to_crm'> {
  const stored: StoredActivityDefinition['attributes'] = [];
  const mapToCrm: Record<string, string> = {};
  attributes.forEach((attribute, i) => {
    const where = `attributes[${i}]`;
    const kind = KIND_OF_DISPLAY_TYPE[attribute.display_type];
    if (!kind || !isDisplayType(attribute.display_type)) {
      fail(
        `${where}.display_type`,
        `unknown display type "${attribute.display_type}" (expected one of ${ATTRIBUTE_DISPLAY_TYPES.join(', ')})`,
      );
    }
    const name = kebabName(attribute.name);
    if (name === '') fail(`${where}.name`, 'expected at least one letter or digit');
    if (name.length > MAX_FIELD_NAME_LENGTH) {
      fail(`${where}.name`, `longer than ${MAX_FIELD_NAME_LENGTH} characters as a field name`);
    }
    const id = `${ATTRIBUTE_KINDS[kind]}:cm:${name}`;
    if (stored.some((other) => fieldNameOf(other.id) === name)) {
      fail(`${where}.name`, `another attribute is also named "${name}"`);
    }
    stored.push({ id, name: attribute.name, kind, display_type: attribute.display_type });
    const target = attribute.field_id;
    if (target !== undefined && !NO_MAPPING.has(target)) {
      if (!tenant.personFields.get(target)) {
        fail(`${where}.field_id`, `"${target}" is not a person field of this instance`);
      }
      mapToCrm[id] = target;
    }
  });
  return {
    attributes: stored,
    ...(Object.keys(mapToCrm).length > 0 ? { map_to_crm: mapToCrm } : {}),
  };
}

/** Checks a stored definition as the configuration checks its own (kinds, mappings). */
/** A definition checked like the configuration file's (attribute IDs, kinds, mappings to person fields). */
export function checked(
  definition: StoredActivityDefinition,
  tenant: Tenant,
): StoredActivityDefinition {
  return parseWith(
    StoredActivityDefinition.superRefine((candidate, ctx) => {
      checkActivityDefinition(candidate, tenant.personFields, [], ctx);
    }),
    definition,
    'activity definition',
  );
}

/** A definition from the real API's create request. */
export function definitionOfRequest(
  request: CustomActivityRequest,
  tenant: Tenant,
  now: string,
): StoredActivityDefinition {
  const name = kebabName(request.name);
  if (name === '') fail('name', 'expected at least one letter or digit');
  const { attributes, map_to_crm } = attributesOf(request.attributes ?? [], tenant);
  const displayText = displayTextOf(request.name, request.display_style, attributes);
  return checked(
    {
      id: `act:cm:${name}`,
      name: request.name,
      ...(request.icon_id !== undefined ? { icon: request.icon_id } : {}),
      ...(displayText !== undefined ? { display_text: displayText } : {}),
      attributes,
      ...(map_to_crm ? { map_to_crm } : {}),
      conversion_value: request.track_conversion_value ?? false,
      track_as_touch: request.touch ?? true,
      filterable: request.filterable ?? true,
      visible_in_feeds: request.visible_in_feeds ?? true,
      display_style: request.display_style ?? { type: 'activity' },
      source: 'api',
      created_at: now,
      edited_at: now,
    },
    tenant,
  );
}

/** A stored definition as the real API answers it (`custom_activity`). */
export function customActivityOf(definition: StoredActivityDefinition) {
  const activityName = fieldNameOf(definition.id);
  const style = definition.display_style ?? { type: 'activity' as const };
  const attributeId =
    style.type === 'activity_attribute'
      ? (style.attribute_field_id ??
        definition.attributes.find(
          (a) =>
            style.attribute_name !== undefined &&
            kebabName(a.name) === kebabName(style.attribute_name),
        )?.id)
      : undefined;
  return {
    name: definition.name,
    activity_field_id: definition.id,
    state: definition.archived_at ? ('archived' as const) : ('awaiting_implementation' as const),
    display_mode: {
      type: style.type,
      ...(attributeId ? { attribute_field_id: attributeId } : {}),
      ...(style.type === 'activity_template' && style.template ? { template: style.template } : {}),
    },
    attributes: definition.attributes.map((attribute) => ({
      name: attribute.name,
      field_id: attribute.id,
      display_type:
        attribute.display_type ??
        (attribute.kind ? KIND_DISPLAY_TYPES[attribute.kind] : displayOfId(attribute.id)),
      liquid_name: `activity.custom.${activityName}.${fieldNameOf(attribute.id)}`,
    })),
    icon_id: definition.icon ?? 'flag-activities-illustration-icon',
    track_conversion_value: definition.conversion_value,
    touch: definition.track_as_touch,
    filterable: definition.filterable ?? true,
    visible_in_feeds: definition.visible_in_feeds ?? true,
    created_by: definition.source === 'api' ? 'Public API' : 'Configuration',
    ...(definition.created_at ? { created_at: definition.created_at } : {}),
    ...(definition.edited_at ? { edited_at: definition.edited_at } : {}),
  };
}

function displayOfId(id: string): string {
  const type = id.split(':')[0];
  const entry = Object.entries(DISPLAY_TYPES).find(([, rule]) => rule.type === type);
  return entry?.[0] ?? 'text';
}

/** `POST /v1/definitions/activity/create`, either shape; 409 naming a definition that exists. */
export async function createActivityDefinition(
  body: Record<string, unknown>,
  tenant: Tenant,
  store: Pick<DefinitionStore, 'addActivityDefinition'>,
  now = new Date(),
): Promise<
  { activity: ActivityDefinitionConfig } | { custom_activity: ReturnType<typeof customActivityOf> }
> {
  if ('id' in body) {
    const definition = parseWith(
      ActivityDefinition.superRefine((candidate, ctx) => {
        checkActivityDefinition(candidate, tenant.personFields, [], ctx);
      }),
      body,
      'activity definition',
    );
    if (!(await store.addActivityDefinition(tenant.instance.id, definition))) {
      throw new ConflictError(`id: the activity definition ${definition.id} already exists`);
    }
    return { activity: definition };
  }
  const request = parseWith(CustomActivityRequest, body, 'activity definition');
  const definition = definitionOfRequest(request, tenant, now.toISOString());
  if (!(await store.addActivityDefinition(tenant.instance.id, definition))) {
    throw new ConflictError(
      `name: an activity definition named "${request.name}" (${definition.id}) already exists`,
    );
  }
  return { custom_activity: customActivityOf(definition) };
}

const idOf = (request: CustomActivityModifyRequest) =>
  request.activity_field_id ?? `act:cm:${kebabName(request.name ?? '')}`;

/** `PUT /v1/definitions/activity/modify`: the members given replace the definition's. */
export async function modifyActivityDefinition(
  request: CustomActivityModifyRequest,
  tenant: Tenant,
  store: Pick<DefinitionStore, 'changeActivityDefinition'>,
  now = new Date(),
) {
  const id = idOf(request);
  const changed = await store.changeActivityDefinition(tenant.instance.id, id, (current) => {
    if (current.archived_at) {
      fail('activity_field_id', `the activity definition ${id} is archived`);
    }
    const mapped = request.attributes ? attributesOf(request.attributes, tenant) : undefined;
    const attributes = mapped?.attributes ?? current.attributes;
    const style = request.display_style ?? current.display_style;
    const name =
      request.activity_field_id !== undefined && request.name ? request.name : current.name;
    const { display_text: _old, map_to_crm: _oldMap, ...rest } = current;
    const displayText = request.display_style
      ? displayTextOf(name, style, attributes)
      : current.display_text;
    const mapToCrm = mapped ? mapped.map_to_crm : current.map_to_crm;
    return checked(
      {
        ...rest,
        name,
        attributes,
        ...(mapToCrm ? { map_to_crm: mapToCrm } : {}),
        ...(displayText !== undefined ? { display_text: displayText } : {}),
        ...(request.icon_id !== undefined ? { icon: request.icon_id } : {}),
        ...(request.track_conversion_value !== undefined
          ? { conversion_value: request.track_conversion_value }
          : {}),
        ...(request.touch !== undefined ? { track_as_touch: request.touch } : {}),
        ...(request.filterable !== undefined ? { filterable: request.filterable } : {}),
        ...(request.visible_in_feeds !== undefined
          ? { visible_in_feeds: request.visible_in_feeds }
          : {}),
        ...(style ? { display_style: style } : {}),
        edited_at: now.toISOString(),
      },
      tenant,
    );
  });
  if (!changed) fail('activity_field_id', `no activity definition ${id} in this instance`);
  return { custom_activity: customActivityOf(changed) };
}

/**
 * `DELETE /v1/definitions/activity/delete`: archives the definition, as the real API does
 * (`{"archived_activity": "<id>"}`). Its recorded activities stay; new ones are refused.
 */
export async function archiveActivityDefinition(
  request: z.infer<typeof CustomActivityDeleteRequest>,
  tenant: Tenant,
  store: Pick<DefinitionStore, 'changeActivityDefinition'>,
  now = new Date(),
) {
  const id = request.activity_field_id;
  const archived = await store.changeActivityDefinition(tenant.instance.id, id, (current) =>
    current.archived_at ? current : { ...current, archived_at: now.toISOString() },
  );
  if (!archived) fail('activity_field_id', `no activity definition ${id} in this instance`);
  return { archived_activity: id };
}
