import { ID_PATTERN } from '../ids.js';

/**
 * Which people an answer the service keeps names (an `Idempotency-Key` answer, an
 * asynchronous request's result or failure): so that erasing a person finds every kept
 * record that names them through a key (`<inst>#PREF#<person>` reference items, written
 * with the record), never a scan. Names are read where answers put them: `person_id`
 * members, the entries of `contacts` (listings and get-by-ids), and IDs quoted in `error`
 * texts (a key value "already belongs to another person (<id>)").
 */
const QUOTED_ID = /\b[0-9a-f]{24}\b/g;

export function personIdsNamedIn(answer: unknown): string[] {
  const found = new Set<string>();
  const visit = (value: unknown, member?: string): void => {
    if (Array.isArray(value)) {
      for (const entry of value) {
        if (member === 'contacts' && isRecord(entry) && isId(entry.id)) found.add(entry.id);
        visit(entry);
      }
      return;
    }
    if (isRecord(value)) {
      for (const [name, inner] of Object.entries(value)) {
        if (member === 'contacts' && ID_PATTERN.test(name)) found.add(name);
        if (name === 'person_id' && isId(inner)) found.add(inner);
        else if (name === 'error' && typeof inner === 'string') {
          for (const quoted of inner.match(QUOTED_ID) ?? []) found.add(quoted);
        } else visit(inner, name);
      }
    }
  };
  visit(answer);
  return [...found];
}

/** The same, for an answer kept as JSON text (anything else names nobody). */
export function personIdsNamedInJson(text: string): string[] {
  try {
    return personIdsNamedIn(JSON.parse(text) as unknown);
  } catch {
    return [];
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isId = (value: unknown): value is string =>
  typeof value === 'string' && ID_PATTERN.test(value);
