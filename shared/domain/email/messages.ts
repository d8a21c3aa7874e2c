import { z } from 'zod';

/**
 * A transactional email as the service keeps it (the `emails` table): who it went to, where
 * it stands, its link destinations and what happened to it. States move
 * queued → sending → sent (→ bounced | complained), or to failed or suppressed; each move is
 * a conditional write, so a redelivered queue message never sends twice.
 */
export const EMAIL_STATES = [
  'queued',
  'sending',
  'sent',
  'failed',
  'bounced',
  'complained',
  'suppressed',
] as const;
export type EmailState = (typeof EMAIL_STATES)[number];

export const EmailEvent = z.object({
  type: z.string(),
  at: z.string(),
  url: z.string().optional(),
  detail: z.string().optional(),
  /** The address a delivery, bounce or complaint is about (the recipient's, or a cc's). */
  recipient: z.string().optional(),
});
export type EmailEvent = z.infer<typeof EmailEvent>;

export const EmailRecord = z.object({
  instance_id: z.string(),
  message_id: z.string(),
  request_id: z.string(),
  person_id: z.string(),
  email_name: z.string(),
  /** The recipient's address (the person's email when the request was made). */
  to: z.string(),
  /** The rendered subject (emails recorded before it was kept have none). */
  subject: z.string().optional(),
  status: z.enum(EMAIL_STATES),
  error: z.string().optional(),
  /** Destinations of the tracked links, by position. */
  links: z.array(z.string()),
  events: z.array(EmailEvent),
  created_at: z.string(),
  updated_at: z.string(),
  ses_message_id: z.string().optional(),
  /** The send attempt holding `sending`, and since when (epoch ms). */
  attempt: z.string().optional(),
  sending_at: z.number().optional(),
  /**
   * When the attempt ended without learning SES's answer (epoch ms): the attempt is over, and
   * only SES's own event can say whether the email went (deliver.ts).
   */
  unknown_at: z.number().optional(),
});
export type EmailRecord = z.infer<typeof EmailRecord>;

export const AttachmentRef = z.object({
  filename: z.string(),
  content_type: z.string(),
  /** The decoded content's key in the payloads bucket (content-addressed). */
  key: z.string(),
});
export type AttachmentRef = z.infer<typeof AttachmentRef>;

/** A rendered email, ready to be built into MIME and sent. */
export const OutgoingEmail = z.object({
  from: z.object({ address: z.string(), name: z.string().optional() }),
  reply_to: z.string().optional(),
  to: z.string(),
  cc: z.array(z.string()),
  subject: z.string(),
  html: z.string(),
  /** The text part; absent, the worker derives it from `html` (off the request's time). */
  text: z.string().optional(),
  headers: z.record(z.string(), z.string()),
  attachments: z.array(AttachmentRef),
});
export type OutgoingEmail = z.infer<typeof OutgoingEmail>;

/** What the email queue carries: the message, and its email inline or in the bucket. */
export const EmailJob = z.object({
  v: z.literal(1),
  instance_id: z.string(),
  message_id: z.string(),
  email: OutgoingEmail.optional(),
  payload: z.object({ key: z.string() }).optional(),
  /**
   * The job is queued before its record is written (send.ts): until this moment (epoch ms,
   * the sending request's deadline) a missing record may still come; after it, it never will.
   */
  record_by: z.number().optional(),
});
export type EmailJob = z.infer<typeof EmailJob>;

/**
 * A new email as it is written: its record, and the rendered HTML as the recipient reads it
 * before tracking (link destinations as written, no open pixel), kept for the console's
 * preview (`PREVIEW_RETENTION_DAYS`).
 */
export type NewEmail = EmailRecord & { preview_html?: string };

/** What the API writes and reads of emails and suppressed addresses. */
export interface EmailStore {
  /** The addresses (lower-cased) of `addresses` that are on the instance's suppression list. */
  suppressed(instanceId: string, addresses: string[]): Promise<Set<string>>;
  /**
   * Writes new records (with each, its place in the instance's log and its preview);
   * `written` hears of each record as soon as it is known to be stored.
   */
  create(records: NewEmail[], written: (messageId: string) => void): Promise<void>;
  get(instanceId: string, messageIds: string[]): Promise<Map<string, EmailRecord>>;
}

/** The email queue and the bucket its large payloads and attachments go to. */
export interface EmailQueue {
  /** Stores attachments (content-addressed) and answers their keys, in order. */
  putAttachments(instanceId: string, contents: Buffer[]): Promise<string[]>;
  /** Queues jobs; answers the message IDs of those queued (all, unless it throws part-way). */
  send(jobs: EmailJob[], queued: (messageId: string) => void): Promise<void>;
}

/** The statuses `POST /v1/transactional/get` reports (`sending` is still `queued` to clients). */
export function visibleStatus(state: EmailState): Exclude<EmailState, 'sending'> {
  return state === 'sending' ? 'queued' : state;
}

/** How long a message of this service is kept (its record, for status and link lookups). */
export const EMAIL_RETENTION_DAYS = 400;

/** How long an email's rendered HTML is kept for the console's preview. */
export const PREVIEW_RETENTION_DAYS = 30;

/** A page of an instance's (or a person's) emails, newest first: message IDs sort by time. */
export interface EmailLogQuery {
  limit: number;
  /** Only emails older than this message (the last of the page before). */
  before?: string;
}

export interface EmailLogPage {
  records: EmailRecord[];
  /** The `before` of the next page; none on the last. */
  next?: string;
}

/** What the console reads of sent emails: bounded queries, never a scan. */
export interface EmailLog {
  /**
   * The instance's emails, newest first: `limit` places of the log, their emails (one erased
   * meanwhile is left out), and the position after the page when more follow.
   */
  recent(instanceId: string, query: EmailLogQuery): Promise<EmailLogPage>;
  /** One person's emails, newest first. */
  ofPerson(instanceId: string, personId: string, query: EmailLogQuery): Promise<EmailLogPage>;
  /** An email's kept HTML: `undefined` when none is kept (expired, too large, never built). */
  preview(instanceId: string, messageId: string): Promise<string | undefined>;
}
