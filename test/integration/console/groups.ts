import { expect } from '@jest/globals';
import { call, KEYS } from '../stack.js';
import { consoleCall } from './sign-in.js';

/** What the console's organizations and audiences tests share: people made, audit read. */
export const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

export type Listed = { id: string; fields?: Record<string, unknown> };
export const emailsOf = (contacts: unknown) =>
  (contacts as Listed[]).map((person) => person.fields?.['str::email']).sort();

export async function mergePeople(people: Record<string, unknown>[]): Promise<string[]> {
  const merged = await call('/v1/person/merge', {
    key: KEYS.acme,
    body: { people: people.map((fields) => ({ fields })) },
  });
  expect(merged.status).toBe(200);
  return (merged.body.people as { person_id: string }[]).map((person) => person.person_id);
}

export async function auditOf(instanceId: string, token: string) {
  const audit = await consoleCall('POST', '/console/v1/audit/get', token, {
    instance_id: instanceId,
    limit: 100,
  });
  expect(audit.status).toBe(200);
  return audit.body.entries as { action: string; target: string; details: unknown }[];
}
