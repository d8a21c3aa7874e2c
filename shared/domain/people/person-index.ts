import type { FieldValue } from '../fields/field-values.js';
import { EMAIL } from './person.js';

/**
 * Search and sort tokens of a person: the lower-cased email, "first last" and "last first".
 * They are the sort keys of the people table's `email`, `first` and `last` indexes (with the
 * ID appended), so that `q` (a prefix of any of them) and sorting by email or name are
 * answered from indexes. A person without the value sorts after everyone (`2`) in
 * ascending order; present values start with `1`.
 */
export const FIRST = 'str::first';
export const LAST = 'str::last';

export type SearchIndex = 'email' | 'first' | 'last';
export const SEARCH_INDEXES: readonly SearchIndex[] = ['email', 'first', 'last'];

/** Sort fields answered from an index, and the index that answers each. */
export const SORT_INDEXES: Readonly<Record<string, SearchIndex>> = {
  [EMAIL]: 'email',
  [FIRST]: 'first',
  [LAST]: 'last',
};

/** The fields each token is made from. */
export const TOKEN_SOURCES: Readonly<Record<SearchIndex, readonly string[]>> = {
  email: [EMAIL],
  first: [FIRST, LAST],
  last: [LAST, FIRST],
};

const MISSING = '2';

export function normalizeSearch(text: string): string {
  return text.trim().toLowerCase().replace(/\s+/g, ' ');
}

function token(...parts: (FieldValue | undefined)[]): string {
  const text = normalizeSearch(parts.filter((part) => typeof part === 'string').join(' '));
  return text === '' ? MISSING : `1${text}`;
}

export type SearchTokens = Record<SearchIndex, string>;

export function searchTokens(fields: Record<string, FieldValue | undefined>): SearchTokens {
  return {
    email: token(fields[EMAIL]),
    first: token(fields[FIRST], fields[LAST]),
    last: token(fields[LAST], fields[FIRST]),
  };
}

/** The sort key of a person in an index: its token, then its ID (unique, and a tiebreak). */
export const indexSortKey = (tokenValue: string, id: string) => `${tokenValue}#${id}`;

/** The key range of people whose token starts with the search text. */
export function searchRange(q: string): { from: string; to: string } {
  const prefix = `1${normalizeSearch(q)}`;
  return { from: prefix, to: `${prefix}\u{10FFFF}` };
}

/**
 * Whether a person is reported in a search under the entry of `index`: that entry's sort
 * key is the smallest of the person's sort keys (one per index) that match the prefix.
 */
export function isPrimaryMatch(
  index: SearchIndex,
  keys: Partial<Record<SearchIndex, string>>,
  prefix: string,
): boolean {
  const own = keys[index];
  if (own === undefined) return false;
  return SEARCH_INDEXES.every((other) => {
    const key = keys[other];
    return key === undefined || !key.startsWith(prefix) || key >= own;
  });
}
