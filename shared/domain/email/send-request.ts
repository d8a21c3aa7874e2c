import { z } from 'zod';
import { PayloadTooLargeError, ValidationError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import { MERGE_PREFERENCES } from '../people/merge-request.js';
import { formatPath } from '../validation.js';

/**
 * `POST /v1/transactional/send` (API.md, Transactional email asset and the endpoint): the
 * request's shape and its limits. Shape problems are a 400 naming the member; sizes over a
 * limit are a 413 naming what was over.
 */
const MB = 1024 * 1024;

export const EMAIL_LIMITS = {
  emails: 100,
  /** Of one attachment's `content`, as sent (base64). */
  attachmentBytes: 1 * MB,
  /** Of one built email (headers, parts, attachments). */
  emailBytes: 2 * MB,
  cc: 5,
  /** Links rewritten for click tracking per email; the rest are sent as written. */
  trackedLinks: 200,
  /** The destinations of tracked links, all together (kept on the email's record). */
  trackedLinkBytes: 100_000,
  /** Of `html_body` (UTF-8), the request's or the template's. */
  htmlBodyBytes: 1 * MB,
  /** How deep a body's HTML may nest (its text part is derived from the tree). */
  htmlDepth: 200,
} as const;

/** An address as SES takes it: one mailbox, no display name, no line breaks. */
export const address = z
  .string()
  .trim()
  .max(254, 'expected an email address of at most 254 characters')
  .pipe(z.email({ message: 'expected a valid email address' }));

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export const Attachment = z.object({
  filename: z
    .string({ error: 'expected a file name' })
    .trim()
    .min(1, 'expected a file name')
    .max(255)
    .refine((name) => !/[\r\n"\\/]/.test(name), 'must not contain line breaks, quotes or slashes'),
  content_type: z
    .string({ error: 'expected a MIME type such as application/pdf' })
    .regex(
      /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/i,
      'expected a MIME type such as application/pdf',
    ),
  content: z
    .string({ error: 'expected base64 content' })
    .transform((content) => content.replace(/\s+/g, ''))
    .refine(
      (content) => content.length % 4 === 0 && BASE64.test(content),
      'expected valid base64 content',
    ),
});
export type Attachment = z.infer<typeof Attachment>;

const hexId = (what: string) =>
  z.string().regex(ID_PATTERN, `expected the ID of ${what} (24 hexadecimal characters)`);

/** One email's properties (all optional here: the template or the global asset may give them). */
export const EmailAsset = z.object({
  from_email: address.optional(),
  from_name: z.string().max(255).optional(),
  reply_to: address.optional(),
  cc: z
    .array(address)
    .max(EMAIL_LIMITS.cc, `expected at most ${EMAIL_LIMITS.cc} cc addresses`)
    .optional(),
  subject: z.string().max(998, 'expected at most 998 characters').optional(),
  email_name: z.string().max(255).optional(),
  no_click_tracks: z.boolean().optional(),
  no_open_tracks: z.boolean().optional(),
  /** The spelling of the spec's request samples. */
  no_opens_tracks: z.boolean().optional(),
  html_body: z.string().optional(),
  liquid_syntax_enabled: z.boolean().optional(),
  campaign_id: hexId('a single-send campaign').optional(),
  asset_id: hexId('an email asset').optional(),
  attachments: z.array(Attachment).max(100, 'expected at most 100 attachments').optional(),
});
export type EmailAsset = z.infer<typeof EmailAsset>;

const jsonValues = z.record(z.string().max(255), z.unknown());

export const EmailEntry = z.object({
  fields: z.record(z.string(), z.unknown(), { error: 'expected an object of person fields' }),
  location: z.unknown().optional(),
  asset: EmailAsset.optional(),
  json_values: jsonValues.optional(),
});
export type EmailEntry = z.infer<typeof EmailEntry>;

export const TransactionalSendRequest = z.object({
  asset: EmailAsset,
  emails: z
    .array(EmailEntry)
    .min(1, `expected 1 to ${EMAIL_LIMITS.emails} emails`)
    .max(EMAIL_LIMITS.emails, `expected 1 to ${EMAIL_LIMITS.emails} emails`),
  ...MERGE_PREFERENCES,
  skip_non_existing: z.boolean().optional(),
  static_json_values: jsonValues.optional(),
});
export type TransactionalSendRequest = z.infer<typeof TransactionalSendRequest>;

/**
 * The sizes the spec limits, checked on the raw body before the shape (a 1.5 MB attachment
 * is "too large", whatever else is wrong with it): each attachment's base64 content.
 */
export function checkAttachmentSizes(raw: unknown): void {
  if (!isObject(raw)) return;
  const check = (asset: unknown, path: (string | number)[]) => {
    if (!isObject(asset) || !Array.isArray(asset.attachments)) return;
    asset.attachments.forEach((attachment: unknown, index) => {
      if (!isObject(attachment) || typeof attachment.content !== 'string') return;
      if (attachment.content.length > EMAIL_LIMITS.attachmentBytes) {
        throw new PayloadTooLargeError(
          EMAIL_LIMITS.attachmentBytes,
          `${formatPath([...path, 'attachments', index, 'content'])} (an attachment, base64)`,
        );
      }
    });
  };
  check(raw.asset, ['asset']);
  if (Array.isArray(raw.emails)) {
    raw.emails.forEach((entry: unknown, index) => {
      if (isObject(entry)) check(entry.asset, ['emails', index, 'asset']);
    });
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `campaign_id` and `asset_id` name two kinds of template: one email cannot use both. */
export function checkTemplateChoice(asset: EmailAsset, path: string): void {
  if (asset.campaign_id && asset.asset_id) {
    throw new ValidationError(`${path}: give campaign_id or asset_id, not both`, [
      { field: `${path}.asset_id`, error: 'campaign_id is given too' },
    ]);
  }
}
