import type { ActivityToWrite } from '../activities/record-activities.js';
import type { FieldValue } from '../fields/field-values.js';
import { derivedId } from '../ids.js';
import type { EmailRecord } from './messages.js';

/**
 * The built-in activities of transactional email (API.md, Events): recorded against the
 * email's person, with the email's name and message ID. IDs derive from what happened (the
 * message and the event), so recording the same event again writes the same item.
 */
export const EMAIL_ACTIVITIES = {
  sent: { field_id: 'act::s', display: 'Email sent' },
  opened: { field_id: 'act::o', display: 'Email opened' },
  clicked: { field_id: 'act::c', display: 'Email clicked' },
  bounced: { field_id: 'act::b', display: 'Email bounced' },
} as const;
export type EmailActivityKind = keyof typeof EMAIL_ACTIVITIES;

export function emailActivity(
  kind: EmailActivityKind,
  record: Pick<EmailRecord, 'person_id' | 'message_id' | 'email_name'>,
  at: Date,
  seed: string,
  attributes: Record<string, FieldValue> = {},
): ActivityToWrite {
  const definition = EMAIL_ACTIVITIES[kind];
  return {
    id: derivedId(`${record.message_id}#${kind}#${seed}`, at.getTime()),
    person_id: record.person_id,
    person_status: 'by-id',
    field_id: definition.field_id,
    attr: {
      'str::email-name': record.email_name,
      'str::message-id': record.message_id,
      ...attributes,
    },
    display: `${definition.display}: ${record.email_name}`,
    created_at: at.toISOString(),
    source: 'email',
  };
}
