import { z } from 'zod';
import { NotFoundError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import { visibleStatus, type EmailRecord } from './messages.js';

/** `POST /v1/transactional/get` (DESIGN.md): emails by message ID, with their events. */
export const TransactionalGetRequest = z.object({
  message_ids: z
    .array(z.string().regex(ID_PATTERN, 'expected a message ID (24 hexadecimal characters)'))
    .min(1, 'expected 1 to 100 message IDs')
    .max(100, 'expected 1 to 100 message IDs'),
});
export type TransactionalGetRequest = z.infer<typeof TransactionalGetRequest>;

export interface EmailReader {
  get(instanceId: string, messageIds: string[]): Promise<Map<string, EmailRecord>>;
}

/**
 * The emails asked for, in order; an ID of no email of this instance (another instance's
 * included) is an entry with `error: "not found"`, and a request that finds none is a 404.
 */
export async function getEmails(
  request: TransactionalGetRequest,
  instanceId: string,
  reader: EmailReader,
) {
  const records = await reader.get(instanceId, request.message_ids);
  if (records.size === 0) {
    throw new NotFoundError(
      request.message_ids.length === 1
        ? `message_ids[0]: no email ${request.message_ids[0] ?? ''} in this instance`
        : 'message_ids: none of these emails is in this instance',
    );
  }
  return {
    emails: request.message_ids.map((id) => {
      const record = records.get(id);
      if (!record) return { message_id: id, error: 'not found' };
      return {
        message_id: id,
        person_id: record.person_id,
        email_name: record.email_name,
        status: visibleStatus(record.status),
        ...(record.error !== undefined ? { error: record.error } : {}),
        events: record.events,
      };
    }),
  };
}
