import type { FieldValues } from '../fields/field-catalog.js';
import type { FieldValue } from '../fields/field-values.js';

/**
 * Field-level planning shared by every kind of record: what merging sent values into stored
 * ones changes under strategy 1 (append only) or 2 (overwrite; `null` clears; `overwrite`
 * false keeps a field's existing value), and which key claims move.
 */
export interface FieldChanges {
  /** Fields written unconditionally (strategy 2). */
  sets: Record<string, FieldValue>;
  /** Fields written only where the record has no value. */
  setsIfAbsent: Record<string, FieldValue>;
  /** Fields `null` clears that the record holds (a change). */
  removes: string[];
  /**
   * Fields `null` clears that the record did not hold when read: removed again by the write
   * (harmless when absent), so a clear never depends on having seen the value.
   */
  clears: string[];
  after: Record<string, FieldValue>;
}

/** Keys compared without case: emails, organization names and websites. */
const CASE_INSENSITIVE_KEYS = new Set(['str::email', 'str:o:name', 'str:o:website']);

/** Key values compare trimmed and lower-cased for emails, names and websites; exactly otherwise. */
export function normalizeKey(fieldId: string, value: FieldValue): string | undefined {
  if (typeof value === 'string') {
    return CASE_INSENSITIVE_KEYS.has(fieldId) ? value.trim().toLowerCase() : value;
  }
  if (typeof value === 'number') return String(value);
  return undefined;
}

/** The key values a set of fields claims: field ID → normalized value. */
export function claimsOf(
  fields: Record<string, FieldValue | null>,
  keyFields: readonly string[],
): Map<string, string> {
  const claims = new Map<string, string>();
  for (const fieldId of keyFields) {
    const value = fields[fieldId];
    if (value === undefined || value === null) continue;
    const key = normalizeKey(fieldId, value);
    if (key !== undefined && key !== '') claims.set(fieldId, key);
  }
  return claims;
}

export function sameValue(a: FieldValue | undefined, b: FieldValue | undefined): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  const keys = (value: object) => Object.keys(value).sort();
  return JSON.stringify(a, keys(a)) === JSON.stringify(b, keys(b));
}

export function planFieldChanges(
  before: Record<string, FieldValue>,
  values: FieldValues,
  strategy: 1 | 2,
  overwrite: Record<string, boolean>,
  isStored: (fieldId: string) => boolean,
): FieldChanges {
  const sets: Record<string, FieldValue> = {};
  const setsIfAbsent: Record<string, FieldValue> = {};
  const removes: string[] = [];
  const clears: string[] = [];
  const after = new Map(Object.entries(before));
  for (const [fieldId, value] of Object.entries(values)) {
    if (!isStored(fieldId)) continue;
    const current = before[fieldId];
    const overwriting = strategy === 2 && overwrite[fieldId] !== false;
    if (value === null) {
      if (overwriting && current !== undefined) {
        removes.push(fieldId);
        after.delete(fieldId);
      } else if (overwriting) clears.push(fieldId);
    } else if (overwriting) {
      if (!sameValue(current, value)) {
        sets[fieldId] = value;
        after.set(fieldId, value);
      }
    } else if (current === undefined) {
      setsIfAbsent[fieldId] = value;
      after.set(fieldId, value);
    }
  }
  return { sets, setsIfAbsent, removes, clears, after: Object.fromEntries(after) };
}

/**
 * How key claims move from `before` to `after`, and the condition that makes the move safe
 * (the key field still holds its old value) added to `expected`.
 */
export function claimChanges(
  before: Record<string, FieldValue>,
  after: Record<string, FieldValue>,
  keyFields: readonly string[],
  expected: Record<string, FieldValue | undefined>,
) {
  const beforeClaims = claimsOf(before, keyFields);
  const afterClaims = claimsOf(after, keyFields);
  const claimsAdded = new Map<string, string>();
  const claimsReleased = new Map<string, string>();
  for (const field of keyFields) {
    const old = beforeClaims.get(field);
    const next = afterClaims.get(field);
    if (old === next) continue;
    expected[field] = before[field];
    if (old !== undefined) claimsReleased.set(field, old);
    if (next !== undefined) claimsAdded.set(field, next);
  }
  return { claimsAdded, claimsReleased };
}
