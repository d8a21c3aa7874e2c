import { expect } from '@jest/globals';
import { call, callRepeating } from './stack.js';

/** Helpers for the people tests: merge, read back, list activities. */
export interface MergeEntry {
  person_id?: string;
  status: string;
  error?: string;
}

let counter = 0;
/** An email address no other test uses. */
export function uniqueEmail(label = 'p'): string {
  counter += 1;
  return `${label}-${Date.now().toString(36)}-${counter}@example.com`;
}

export async function merge(key: string, body: Record<string, unknown>): Promise<MergeEntry[]> {
  return mergeRepeating(key, body, 1);
}

/**
 * A merge repeated, as a client would, while its answer is 503 (the store overloaded or the
 * request out of time, on a loaded machine under injected faults): a merge matches the same
 * people again, so a repeat is safe and returns every person's ID. For the bulk set-ups of
 * tests whose subject is not the merge; the last of `attempts` must answer 200 (a failure
 * shows the error it met).
 */
export async function mergeRepeating(
  key: string,
  body: Record<string, unknown>,
  attempts = 3,
): Promise<MergeEntry[]> {
  const response = await callRepeating('/v1/person/merge', { key, body }, attempts);
  expect({ status: response.status, error: response.body.error }).toEqual({
    status: 200,
    error: undefined,
  });
  return response.body.people as MergeEntry[];
}

export async function mergeOne(
  key: string,
  record: Record<string, unknown>,
  options: Record<string, unknown> = {},
) {
  const [entry] = await merge(key, { people: [record], ...options });
  if (!entry) throw new Error('no entry');
  return entry;
}

export async function fieldsOf(
  key: string,
  id: string,
  fields: string[],
): Promise<Record<string, unknown>> {
  const response = await call('/v1/person/get-by-ids', {
    key,
    body: { contact_ids: [id], fields },
  });
  expect(response.status).toBe(200);
  const contact = (response.body.contacts as Record<string, { fields?: Record<string, unknown> }>)[
    id
  ];
  if (!contact) throw new Error(`person ${id} not found`);
  return contact.fields ?? {};
}

export async function activitiesOf(key: string, id: string) {
  const response = await call('/v1/person/get/activities', { key, body: { person_id: id } });
  expect(response.status).toBe(200);
  return response.body.activities as {
    id: string;
    field_id: string;
    attr: Record<string, unknown>;
    created_at: string;
  }[];
}

export async function meta(key: string) {
  const response = await call('/v1/person/get', { key, body: { limit: 1 } });
  expect(response.status).toBe(200);
  return response.body.meta as Record<string, number>;
}
