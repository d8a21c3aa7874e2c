import { expect } from '@jest/globals';
import { call, callRepeating, WORKER_PATIENCE_MS } from './stack.js';

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

export interface Contact {
  id: string;
  fields?: Record<string, unknown>;
}

/**
 * Every contact of a listing, page after page by cursor until `has_more` is false (a page of
 * a filtered listing may hold fewer than `limit`).
 */
export async function listAll(key: string, body: Record<string, unknown>): Promise<Contact[]> {
  const listed: Contact[] = [];
  let request = body;
  for (let page = 0; page < 1_000; page += 1) {
    const response = await call('/v1/person/get', { key, body: request });
    expect({ status: response.status, error: response.body.error }).toEqual({
      status: 200,
      error: undefined,
    });
    listed.push(...(response.body.contacts as Contact[]));
    if (!response.body.has_more) return listed;
    request = { ...body, cursor_id: response.body.cursor_id };
  }
  throw new Error('a listing of more than 1,000 pages');
}

/**
 * A listing once `done` says it is what the test expects. Filters are answered from the field
 * index, which the people table's stream keeps a moment behind the writes (docs/api.md,
 * Listing): a test that lists right after it wrote waits for it, as a client would.
 */
export async function listedEventually(
  key: string,
  body: Record<string, unknown>,
  done: (contacts: Contact[]) => boolean,
): Promise<Contact[]> {
  const deadline = Date.now() + WORKER_PATIENCE_MS;
  for (;;) {
    const contacts = await listAll(key, body);
    if (done(contacts) || Date.now() > deadline) return contacts;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The IDs of a listing once they are `expected` (in any order): see `listedEventually`. */
export async function idsEventually(
  key: string,
  body: Record<string, unknown>,
  expected: readonly (string | undefined)[],
): Promise<string[]> {
  const wanted = [...expected].sort();
  const contacts = await listedEventually(key, body, (listed) => {
    const ids = listed.map((c) => c.id).sort();
    return ids.length === wanted.length && ids.every((id, i) => id === wanted[i]);
  });
  return contacts.map((c) => c.id);
}
