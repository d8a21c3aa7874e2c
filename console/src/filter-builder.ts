/**
 * The filter builder's conditions written in the API's filter language: `{"$and": [...]}` or
 * `{"$or": [...]}` over conditions `{"$<operator>": {"field_id", "value" | "days_ago"}}`. The
 * fields, their operators and what value each takes come from the console's API
 * (`audiences/get`, `filter_fields`); the server checks the result with the parser of the
 * public API's `audiences/create`, so a value typed wrong is answered there, naming its path.
 */
export type ValueKind =
  'none' | 'boolean' | 'text' | 'number' | 'number-range' | 'days' | 'date' | 'date-range';

export type Combinator = 'and' | 'or';

/** One row of the builder: what the user picked and typed. */
export interface DraftCondition {
  field_id: string;
  operator: string;
  kind: ValueKind;
  /** The value, or a range's first bound. */
  value: string;
  /** A range's second bound. */
  value2: string;
}

/** A number when the text is one; else the text itself, which the server refuses by name. */
function numberOrText(text: string): number | string {
  const trimmed = text.trim();
  return trimmed !== '' && Number.isFinite(Number(trimmed)) ? Number(trimmed) : text;
}

/** One condition of the filter language. */
export function conditionJson(condition: DraftCondition): Record<string, unknown> {
  const { field_id: fieldId, operator, kind, value, value2 } = condition;
  const members = ((): Record<string, unknown> => {
    switch (kind) {
      case 'none':
        return {};
      case 'boolean':
        return { value: value === 'true' };
      case 'number':
        return { value: numberOrText(value) };
      case 'number-range':
        return { value: [numberOrText(value), numberOrText(value2)] };
      case 'days':
        return { days_ago: numberOrText(value) };
      case 'date-range':
        return { value: [value.trim(), value2.trim()] };
      case 'text':
      case 'date':
        return { value: kind === 'date' ? value.trim() : value };
    }
  })();
  return { [operator]: { field_id: fieldId, ...members } };
}

/** The whole filter: every condition under one `$and` or `$or`. */
export function composeFilter(
  combinator: Combinator,
  conditions: readonly DraftCondition[],
): Record<string, unknown> {
  return { [`$${combinator}`]: conditions.map(conditionJson) };
}
