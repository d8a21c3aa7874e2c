import { z } from 'zod';
import type { CursorCodec } from '../cursor.js';
import { ValidationError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';

/** `POST /v1/person/get/activities`: a person's activities, newest first (DESIGN: our addition). */
export const PersonActivitiesRequest = z.object({
  person_id: z.string().regex(ID_PATTERN, 'expected a person ID (24 hexadecimal characters)'),
  limit: z.number().int().min(1).max(100).default(50),
  cursor_id: z.string().max(500).optional(),
  activities: z.array(z.string().min(1)).min(1).max(50).optional(),
});
export type PersonActivitiesRequest = z.infer<typeof PersonActivitiesRequest>;

export interface ActivityView {
  id: string;
  field_id: string;
  attr: Record<string, unknown>;
  /** The display text of a custom activity, rendered when it was recorded. */
  display?: string;
  /** The conversion value (×1000), where the definition enables it. */
  value?: number;
  location?: Record<string, unknown>;
  created_at: string;
}

export interface ActivityReader {
  personExists(instanceId: string, personId: string): Promise<boolean>;
  /** Activities of a person older than `before` (a position), newest first. */
  activities(
    instanceId: string,
    personId: string,
    options: { limit: number; before?: string; fieldIds?: string[] },
  ): Promise<{ activities: ActivityView[]; next?: string }>;
}

const Cursor = z.object({ v: z.literal(2), person: z.string(), before: z.string().min(1) });

export async function getPersonActivities(
  request: PersonActivitiesRequest,
  instanceId: string,
  reader: ActivityReader,
  cursors: CursorCodec,
) {
  const cursor = request.cursor_id ? cursors.decode(Cursor, request.cursor_id) : undefined;
  if (cursor && cursor.person !== request.person_id) {
    throw new ValidationError('cursor_id: it was issued for another person', [
      { field: 'cursor_id', error: 'issued for another person' },
    ]);
  }
  const before = cursor?.before;
  if (!(await reader.personExists(instanceId, request.person_id))) {
    throw new ValidationError(`person_id: no person ${request.person_id} in this instance`, [
      { field: 'person_id', error: 'not found' },
    ]);
  }
  const page = await reader.activities(instanceId, request.person_id, {
    limit: request.limit,
    ...(before ? { before } : {}),
    ...(request.activities ? { fieldIds: request.activities } : {}),
  });
  return {
    activities: page.activities,
    cursor_id: page.next
      ? cursors.encode({ v: 2, person: request.person_id, before: page.next })
      : null,
    has_more: page.next !== undefined,
  };
}
