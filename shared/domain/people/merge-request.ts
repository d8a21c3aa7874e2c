import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { keyFieldsOf, mergeKeysOf, PERSON_ID } from './person.js';
import type { Tenant } from '../tenancy.js';

/** The merge preferences a request may give instead of its data source's. */
export const MERGE_PREFERENCES = {
  merge_by: z.array(z.string()).min(1).max(2).optional(),
  merge_strategy: z.union([z.literal(1), z.literal(2), z.literal(3)]).optional(),
  find_strategy: z.union([z.literal(0), z.literal(1), z.literal(2)]).optional(),
};

/** `POST /v1/person/merge` (API.md): the request-level members. Records are checked one by one. */
export const PersonMergeRequest = z.object({
  people: z
    .array(z.unknown())
    .min(1, 'expected 1 to 100 people')
    .max(100, 'expected 1 to 100 people'),
  async: z.boolean().optional(),
  ...MERGE_PREFERENCES,
  skip_non_existing: z.boolean().optional(),
  /**
   * A field holding an email address (`str::email`, or a custom text field): a record whose
   * address there is on the instance's suppression list is neither created nor merged
   * (`status: "suppressed"`), as the real API answers.
   */
  suppression_list_field_id: z.string().max(255).nullable().optional(),
});
export type PersonMergeRequest = z.infer<typeof PersonMergeRequest>;

const tag = z.string().trim().min(1, 'expected a non-empty tag').max(255);

/** One entry of `people`. */
export const PersonRecord = z.object({
  fields: z.record(z.string(), z.unknown()),
  location: z.unknown().optional(),
  tags: z.array(tag).max(100).optional(),
  unset_tags: z.array(tag).max(100).optional(),
  clear_fields: z.record(z.string(), z.unknown()).optional(),
});
export type PersonRecord = z.infer<typeof PersonRecord>;

export type { MergeOptions, MergeStrategy } from '../merge/merge-engine.js';
import type { MergeOptions } from '../merge/merge-engine.js';

/**
 * The merge preferences of a request: its own `merge_by` and strategies, or the data
 * source's. Merge fields must be merge keys of the instance (email, external ID, or a custom
 * field declared unique whose values have all been claimed), since only their values are
 * kept unique and findable; merging by ID must be exactly `["str::person_id"]`.
 */
export function mergeOptions(
  request: Pick<
    PersonMergeRequest,
    'merge_by' | 'merge_strategy' | 'find_strategy' | 'skip_non_existing'
  > & { suppression_list_field_id?: string | null | undefined },
  tenant: Tenant,
): MergeOptions {
  const source = tenant.dataSource;
  const mergeBy = request.merge_by ?? source.merge_by;
  const keyFields = keyFieldsOf(tenant.instance);
  const mergeKeys = mergeKeysOf(tenant.instance);
  const byId = mergeBy.includes(PERSON_ID);
  if (byId && mergeBy.length !== 1) {
    throw new ValidationError('merge_by: to merge by ID it must be exactly ["str::person_id"]', [
      { field: 'merge_by', error: 'str::person_id must be the only merge field' },
    ]);
  }
  if (!byId) {
    mergeBy.forEach((fieldId, index) => {
      if (!mergeKeys.includes(fieldId)) {
        const problem = keyFields.includes(fieldId)
          ? `"${fieldId}" is being made unique (the values people hold are being claimed); it can be merged by once the configuration has been applied`
          : `"${fieldId}" cannot be a merge field: its values are not unique per instance (use one of ${mergeKeys.join(', ')}, str::person_id, or declare the field "unique": true)`;
        throw new ValidationError(`merge_by[${index}]: ${problem}`, [
          { field: `merge_by[${index}]`, error: problem },
        ]);
      }
    });
    if (mergeBy.length === 2 && mergeBy[0] === mergeBy[1]) {
      throw new ValidationError('merge_by: the two merge fields must differ', [
        { field: 'merge_by', error: 'the two merge fields must differ' },
      ]);
    }
  }
  return {
    mergeBy,
    byId,
    ...(request.suppression_list_field_id
      ? { suppressionField: suppressionField(request.suppression_list_field_id, tenant) }
      : {}),
    strategy: request.merge_strategy ?? source.merge_strategy,
    findStrategy: request.find_strategy ?? source.find_strategy,
    skipNonExisting: request.skip_non_existing ?? false,
    keyFields,
  };
}

/** The field `suppression_list_field_id` names: a text field of the instance's people. */
function suppressionField(fieldId: string, tenant: Tenant): string {
  const field = tenant.personFields.get(fieldId);
  if (!field || field.type !== 'str' || !field.stored) {
    const problem = `"${fieldId}" is not a text person field holding email addresses (such as str::email)`;
    throw new ValidationError(`suppression_list_field_id: ${problem}`, [
      { field: 'suppression_list_field_id', error: problem },
    ]);
  }
  return fieldId;
}
