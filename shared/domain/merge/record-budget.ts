/**
 * How much one record may hold, so that no item ever reaches DynamoDB's 400 KB limit (past
 * which every later write to it would fail). Checked on the state a write would leave, from
 * a fresh read, before writing; a record over budget is refused (400 naming what is over).
 * The margin left to 400 KB covers index keys and what a concurrent request adds between
 * the check and its own write; the store's own refusal is reported the same way.
 */
export const MAX_TAGS_PER_PERSON = 500;

/** Stored field values (and tags) of one person, organization or activity, as UTF-8 JSON. */
export const MAX_RECORD_BYTES = 300 * 1024;

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/** Why `fields` (and `tags`) would be over budget, or `undefined`. `where` names the record. */
export function overRecordBudget(
  where: string,
  noun: string,
  fields: Record<string, unknown>,
  tags?: readonly string[],
): string | undefined {
  if (tags && tags.length > MAX_TAGS_PER_PERSON) {
    return `${where}.tags: the ${noun} would hold ${tags.length} tags; at most ${MAX_TAGS_PER_PERSON} are allowed (remove some with unset_tags)`;
  }
  const bytes = jsonBytes(fields) + (tags ? jsonBytes(tags) : 0);
  if (bytes > MAX_RECORD_BYTES) {
    return `${where}: the ${noun}'s values would take ${bytes} bytes; at most ${MAX_RECORD_BYTES} are allowed (fields${tags ? ' and tags' : ''} together, as UTF-8 JSON)`;
  }
  return undefined;
}
