import {
  CdpError,
  ForbiddenError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  ValidationError,
  type ErrorDetail,
} from '../errors.js';
import { newId } from '../ids.js';
import { plainStatus } from '../merge/merge-engine.js';
import { MaybeQueuedError } from '../ingest/ingest.js';
import { canWait, currentDeadline } from '../../lib/time-budget.js';
import type { AssetConfig, CampaignConfig } from '../instance-config.js';
import { mergePeople, type MergeContext, type MergeResult } from '../people/merge-people.js';
import { EMAIL, type Person } from '../people/person.js';
import type { Tenant } from '../tenancy.js';
import { parseWith } from '../validation.js';
import { addOpenPixel, BadLinkError, rewriteLinks, scanHtml, yieldToEventLoop } from './html.js';
import type { MessageLinks } from './link-tokens.js';
import {
  jsonVariables,
  parseTemplate,
  personVariables,
  RenderBudget,
  TemplateError,
  type ParsedTemplate,
} from './liquid.js';
import {
  type EmailJob,
  type EmailQueue,
  type EmailRecord,
  type NewEmail,
  type EmailStore,
  type OutgoingEmail,
} from './messages.js';
import {
  checkAttachmentSizes,
  checkTemplateChoice,
  EMAIL_LIMITS,
  TransactionalSendRequest,
  type EmailAsset,
} from './send-request.js';

/**
 * `POST /v1/transactional/send`: gates, limits, templates, recipients (found or created as
 * people), Liquid, tracking and unsubscribe links, then each email is recorded (`queued`)
 * and queued for the email worker. The answer (202) says per entry what became of it.
 */
export type ContactStatus = 'created' | 'merged' | 'skipped' | 'invalid';
export type EmailStatus = 'queued' | 'skipped' | 'suppressed' | 'invalid';

export interface SendEntryResult {
  person_id?: string;
  contact_status: ContactStatus;
  email_status: EmailStatus;
  message_id?: string;
  email_name?: string;
  error?: string;
}

export interface TemplateSource {
  getTemplate(
    instanceId: string,
    kind: 'campaign' | 'asset',
    id: string,
  ): Promise<CampaignConfig | AssetConfig | undefined>;
}

export interface SendContext {
  tenant: Tenant;
  people: Omit<MergeContext, 'tenant'>;
  readPeople: (ids: string[]) => Promise<Map<string, Person>>;
  templates: TemplateSource;
  emails: EmailStore;
  queue: EmailQueue;
  links: (messageId: string) => MessageLinks;
  /** The domain that sends for addresses outside the instance's sending domains. */
  fallbackDomain: string;
  requestId: string;
  now?: () => Date;
  /** The request's rendering budget: `LIQUID_LIMITS` unless given (tests give smaller). */
  renderBudget?: RenderBudget;
}

const PAID_PLANS = new Set(['business', 'enterprise']);

/** The spec's 403s: the feature first, then the plan. */
export function checkSendingAllowed(tenant: Tenant): void {
  const { instance } = tenant;
  if (!instance.transactional_email) {
    throw new ForbiddenError(
      `The transactional email feature is not activated for the instance "${instance.name}": activate it on a playbook or journey, then send again`,
    );
  }
  if (!PAID_PLANS.has(instance.plan)) {
    throw new ForbiddenError(
      `Transactional email requires the Business or Enterprise plan; the instance "${instance.name}" is on the ${instance.plan} plan`,
    );
  }
}

/** One email's properties once its template (if any) and overrides are applied. */
interface ResolvedAsset {
  path: string;
  from_email: string;
  from_name?: string;
  reply_to?: string;
  cc: string[];
  subject: ParsedTemplate | string;
  html: ParsedTemplate | string;
  email_name: string;
  trackClicks: boolean;
  trackOpens: boolean;
  attachments: { filename: string; content_type: string; content: string }[];
}

type Prepared = ResolvedAsset | { error: string };

export async function sendTransactional(
  raw: unknown,
  context: SendContext,
): Promise<{ emails: SendEntryResult[] }> {
  const { tenant } = context;
  checkSendingAllowed(tenant);
  checkAttachmentSizes(raw);
  const request = parseWith(TransactionalSendRequest, raw, 'request body');

  // The email of each entry: its own asset, or the global one (API.md, behaviour rule 1).
  const assets = new Map<EmailAsset, Promise<Prepared>>();
  const resolve = (asset: EmailAsset, path: string) => {
    let prepared = assets.get(asset);
    if (!prepared) {
      checkTemplateChoice(asset, path);
      prepared = resolveAsset(asset, path, context);
      assets.set(asset, prepared);
    }
    return prepared;
  };
  const prepared = await Promise.all(
    request.emails.map((entry, index) =>
      entry.asset
        ? resolve(ownAsset(request.asset, entry.asset), `emails[${index}].asset`)
        : resolve(request.asset, 'asset'),
    ),
  );
  prepared.forEach((asset, index) => {
    if ('error' in asset) return;
    const size = estimatedSize(asset, '');
    if (size > EMAIL_LIMITS.emailBytes) {
      throw new PayloadTooLargeError(
        EMAIL_LIMITS.emailBytes,
        `The email of emails[${index}] (${asset.path}, about ${size} bytes built)`,
      );
    }
  });

  // Recipients are people: found or created by the request's merge preferences.
  const mergeable = request.emails
    .map((entry, index) => ({ entry, index }))
    .filter(({ index }) => !('error' in (prepared[index] as Prepared)));
  const results: SendEntryResult[] = request.emails.map((_entry, index) => {
    const asset = prepared[index] as Prepared;
    return 'error' in asset
      ? { contact_status: 'invalid', email_status: 'invalid', error: asset.error }
      : { contact_status: 'invalid', email_status: 'invalid' };
  });
  if (mergeable.length === 0) throw everyEntryInvalid(results);
  const merged = await mergePeople(
    {
      people: mergeable.map(({ entry }) => ({
        fields: entry.fields,
        ...(entry.location !== undefined ? { location: entry.location } : {}),
      })),
      ...(request.merge_by ? { merge_by: request.merge_by } : {}),
      ...(request.merge_strategy ? { merge_strategy: request.merge_strategy } : {}),
      ...(request.find_strategy !== undefined ? { find_strategy: request.find_strategy } : {}),
      ...(request.skip_non_existing !== undefined
        ? { skip_non_existing: request.skip_non_existing }
        : {}),
    },
    { tenant, ...context.people },
    // Errors name the member the client sent: `emails[5].fields…`, not `people[0].fields…`.
    (position) => `emails[${mergeable[position]?.index ?? position}]`,
  ).catch((error: unknown) => {
    throw renumbered(
      error,
      mergeable.map(({ index }) => index),
    );
  });
  const people = await context.readPeople(
    merged.flatMap((result) => (result.person_id ? [result.person_id] : [])),
  );

  const addresses = new Map<number, string>();
  mergeable.forEach(({ index }, position) => {
    const result = merged[position] as MergeResult;
    const entry = results[index] as SendEntryResult;
    const status = plainStatus(result.status);
    if (status === 'invalid' || !result.person_id) {
      entry.contact_status = status;
      entry.email_status = result.status === 'skipped' ? 'skipped' : 'invalid';
      if (result.error) entry.error = result.error;
      return;
    }
    const person = people.get(result.person_id);
    entry.person_id = result.person_id;
    entry.contact_status = status;
    if (person?.archived_at !== undefined) {
      // Archived after the merge read them (a merge that changed nothing wrote nothing, so no
      // condition stopped it). The merge stands as answered (it may have written the fields
      // just before the archive); the email is refused: archived people are not emailed.
      entry.email_status = 'invalid';
      entry.error = `emails[${index}]: the person ${result.person_id} is archived; restore it (PUT /v1/person/restore) before sending data for it`;
      return;
    }
    const email = person?.fields[EMAIL];
    if (typeof email !== 'string') {
      entry.error = 'the person has no email address (str::email)';
      return;
    }
    addresses.set(index, email);
  });
  const suppressed = await context.emails.suppressed(
    tenant.instance.id,
    [...new Set(addresses.values())].map((address) => address.toLowerCase()),
  );

  // Each email: rendered, its links rewritten, then queued and recorded, a chunk at a time,
  // for as long as the request's deadline leaves time to queue and record what was built.
  const now = context.now?.() ?? new Date();
  const attachmentKeys = await storeAttachments(prepared, context);
  const budget = context.renderBudget ?? new RenderBudget();
  // A request with a short budget (a function's short timeout) keeps a share of what is left.
  const reserveMs = Math.min(QUEUE_RESERVE_MS, (currentDeadline() - Date.now()) / 4);
  const outcome: Outcome = { queued: new Set(), written: new Set() };
  const recipients = [...addresses];
  // Each chunk is queued and recorded while the next one is built: the request waits for the
  // queue and the table once, after its last chunk, not after each. A failure stops the
  // building; what was started finishes, then the answer says what became of each entry.
  const storing: Promise<void>[] = [];
  let failure: { error: unknown } | undefined;
  let built = 0;
  for (let start = 0; start < recipients.length && !failure; start += BUILD_CHUNK) {
    const records: NewEmail[] = [];
    const jobs: EmailJob[] = [];
    for (const [index, to] of recipients.slice(start, start + BUILD_CHUNK)) {
      const entry = results[index] as SendEntryResult;
      if (!canWait(reserveMs)) {
        entry.email_status = 'invalid';
        entry.error = `emails[${index}]: not built: the request ran out of time building its emails (${built} of ${recipients.length} were); send this one again`;
        continue;
      }
      const asset = prepared[index] as ResolvedAsset;
      const messageId = newId(now.getTime());
      const record: EmailRecord = {
        instance_id: tenant.instance.id,
        message_id: messageId,
        request_id: context.requestId,
        person_id: entry.person_id ?? '',
        email_name: asset.email_name,
        to,
        status: 'queued',
        links: [],
        events: [{ type: 'queued', at: now.toISOString() }],
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      };
      built += 1;
      if (suppressed.has(to.toLowerCase())) {
        records.push({
          ...record,
          status: 'suppressed',
          error: 'the address is on the suppression list (an earlier bounce or complaint)',
          events: [{ type: 'suppressed', at: now.toISOString() }],
        });
        Object.assign(entry, { email_status: 'suppressed', message_id: messageId });
        entry.email_name = asset.email_name;
        continue;
      }
      try {
        const person = people.get(entry.person_id ?? '') as Person;
        const email = await buildEmail(
          asset,
          person,
          to,
          { request, index, messageId, attachmentKeys, budget },
          context,
        );
        records.push({
          ...record,
          subject: email.email.subject,
          links: email.links,
          preview_html: email.preview,
        });
        jobs.push({
          v: 1,
          instance_id: tenant.instance.id,
          message_id: messageId,
          email: email.email,
        });
        Object.assign(entry, { email_status: 'queued', message_id: messageId });
        entry.email_name = asset.email_name;
      } catch (error) {
        if (!(
          error instanceof TemplateError ||
          error instanceof ValidationError ||
          error instanceof BadLinkError
        )) {
          throw error;
        }
        entry.email_status = 'invalid';
        entry.error =
          error instanceof BadLinkError ? `emails[${index}]: ${error.message}` : error.message;
      }
      // A long request leaves room for others on a shared process between emails.
      await yieldToEventLoop();
    }
    storing.push(
      queueAndRecord(records, jobs, context, outcome).catch((error: unknown) => {
        failure ??= { error };
      }),
    );
  }
  await Promise.all(storing);
  if (failure) throw stoppedPartWay(failure.error, results, outcome);
  // People merged are written: then the answer says what became of each entry, even if no
  // email could be made; only a request that wrote nothing is a 400.
  if (results.every((entry) => entry.email_status === 'invalid' && !entry.person_id)) {
    throw everyEntryInvalid(results);
  }
  return { emails: results };
}

/**
 * A recipient's own asset: with a template ID it stands alone (the template, then its own
 * properties); otherwise its properties override the global asset's.
 */
function ownAsset(global: EmailAsset, own: EmailAsset): EmailAsset {
  if (own.campaign_id || own.asset_id) return own;
  return { ...global, ...own };
}

async function resolveAsset(
  asset: EmailAsset,
  path: string,
  context: SendContext,
): Promise<Prepared> {
  const instanceId = context.tenant.instance.id;
  let template: CampaignConfig | AssetConfig | undefined;
  if (asset.campaign_id || asset.asset_id) {
    const kind = asset.campaign_id ? 'campaign' : 'asset';
    const id = (asset.campaign_id ?? asset.asset_id) as string;
    template = await context.templates.getTemplate(instanceId, kind, id);
    if (!template) {
      const member = `${path}.${kind}_id`;
      throw new ValidationError(
        `${member}: no ${kind === 'campaign' ? 'single-send campaign' : 'email asset'} ${id} in this instance`,
        [{ field: member, error: 'not found' }],
      );
    }
  }
  const pick = <K extends keyof EmailAsset & keyof CampaignConfig>(key: K) =>
    asset[key] ?? template?.[key];
  const missing = (member: string, what: string) =>
    new ValidationError(`${path}.${member}: ${what}`, [
      { field: `${path}.${member}`, error: what },
    ]);
  const html = pick('html_body');
  const subject = pick('subject');
  const fromEmail = pick('from_email');
  if (html === undefined || html.trim() === '') {
    throw missing('html_body', 'required unless campaign_id or asset_id names a template with one');
  }
  if (Buffer.byteLength(html) > EMAIL_LIMITS.htmlBodyBytes) {
    throw new PayloadTooLargeError(
      EMAIL_LIMITS.htmlBodyBytes,
      asset.html_body === undefined ? `The html_body of ${path}'s template` : `${path}.html_body`,
    );
  }
  if (subject === undefined) throw missing('subject', 'required (here or in the template)');
  if (fromEmail === undefined) throw missing('from_email', 'required (here or in the template)');
  const liquid = asset.liquid_syntax_enabled ?? true;
  const replyTo = pick('reply_to');
  const fromName = pick('from_name');
  const base = {
    path,
    from_email: fromEmail,
    ...(fromName !== undefined ? { from_name: fromName } : {}),
    ...(replyTo !== undefined ? { reply_to: replyTo } : {}),
    cc: asset.cc ?? [],
    email_name: asset.email_name ?? template?.email_name ?? template?.name ?? subject.slice(0, 255),
    trackClicks: !(asset.no_click_tracks ?? false),
    trackOpens: !(asset.no_open_tracks ?? asset.no_opens_tracks ?? false),
    attachments: asset.attachments ?? [],
  };
  if (!liquid) return { ...base, subject, html };
  try {
    return { ...base, subject: parseTemplate(subject, 'text'), html: parseTemplate(html, 'html') };
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    return { error: `${path}: ${error.message}` };
  }
}

/**
 * A built email's size, near enough: its HTML and text parts (the text bounded by what the
 * HTML holds), quoted-printable and base64 overheads, its attachments.
 */
function estimatedSize(asset: ResolvedAsset, html: string, textLength = 0): number {
  const template = typeof asset.html === 'string' ? asset.html.length : 0;
  const body = Math.max(Buffer.byteLength(html) + textLength, template);
  const attachments = asset.attachments.reduce(
    (sum, attachment) => sum + Math.ceil(attachment.content.length * (78 / 76)) + 300,
    0,
  );
  // Bodies go out quoted-printable or base64 (about 4/3), attachments in base64 lines.
  return Math.ceil(body * 1.4) + attachments + 4_096;
}

/** Stores every distinct attachment once; answers each one's key, by its base64 content. */
async function storeAttachments(
  prepared: Prepared[],
  context: SendContext,
): Promise<Map<string, string>> {
  const contents = [
    ...new Set(prepared.flatMap((asset) => ('error' in asset ? [] : asset.attachments))),
  ].map((attachment) => attachment.content);
  const distinct = [...new Set(contents)];
  if (distinct.length === 0) return new Map();
  const keys = await context.queue.putAttachments(
    context.tenant.instance.id,
    distinct.map((content) => Buffer.from(content, 'base64')),
  );
  return new Map(distinct.map((content, i) => [content, keys[i] as string]));
}

/** Where an email stands in its request: the entry, its message ID, stored attachments. */
interface EmailPlace {
  request: TransactionalSendRequest;
  index: number;
  messageId: string;
  attachmentKeys: Map<string, string>;
  /** The request's rendering time, shared by all its emails. */
  budget: RenderBudget;
}

async function buildEmail(
  asset: ResolvedAsset,
  person: Person,
  to: string,
  at: EmailPlace,
  context: SendContext,
): Promise<{ email: OutgoingEmail; links: string[]; preview: string }> {
  const { request, index, budget } = at;
  const links = context.links(at.messageId);
  const unsubscribe = links.unsubscribe();
  const variables = {
    people: personVariables(person, context.tenant.personFields),
    json: jsonVariables(request.static_json_values, request.emails[index]?.json_values),
    urls: { unsubscribe },
  };
  const render = (template: ParsedTemplate | string) =>
    typeof template === 'string' ? Promise.resolve(template) : budget.render(template, variables);
  const subject = (await render(asset.subject)).replace(/[\r\n]+/g, ' ').trim();
  let html = await render(asset.html);
  const scan = await scanHtml(html);
  if (scan.depth > EMAIL_LIMITS.htmlDepth) {
    throw new ValidationError(
      `emails[${index}]: the HTML nests ${scan.depth} elements deep; at most ${EMAIL_LIMITS.htmlDepth} are allowed`,
    );
  }
  // What the console previews: the email as written, before its links and pixel are tracked.
  const preview = html;
  let destinations: string[] = [];
  if (asset.trackClicks) {
    const rewritten = rewriteLinks(html, scan, links.click, (url) => url === unsubscribe);
    html = rewritten.html;
    destinations = rewritten.links;
  }
  if (asset.trackOpens) html = addOpenPixel(html, links.open());
  // The text part is derived by the email worker, off the request; its size is bounded here.
  const size = estimatedSize(asset, html, scan.textLength);
  if (size > EMAIL_LIMITS.emailBytes) {
    throw new ValidationError(
      `emails[${index}]: the built email would be about ${size} bytes, over the limit of ${EMAIL_LIMITS.emailBytes} bytes`,
    );
  }
  const from = sender(asset, context);
  return {
    links: destinations,
    preview,
    email: {
      from,
      ...(asset.reply_to !== undefined
        ? { reply_to: asset.reply_to }
        : from.address !== asset.from_email
          ? { reply_to: asset.from_email }
          : {}),
      to,
      cc: asset.cc,
      subject,
      html,
      headers: {
        'List-Unsubscribe': `<${unsubscribe}>`,
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
      attachments: asset.attachments.map((attachment) => ({
        filename: attachment.filename,
        content_type: attachment.content_type,
        key: at.attachmentKeys.get(attachment.content) ?? '',
      })),
    },
  };
}

/**
 * The From address: as given when its domain is one of the instance's sending domains (or
 * below one), otherwise the same local part on the deployment's fallback sending domain.
 */
function sender(asset: ResolvedAsset, context: SendContext): OutgoingEmail['from'] {
  const [local, domain] = splitAddress(asset.from_email);
  const own = context.tenant.instance.sending_domains.some(
    (sending) => domain === sending.toLowerCase() || domain.endsWith(`.${sending.toLowerCase()}`),
  );
  const address = own
    ? asset.from_email
    : `${local.replace(/[^a-z0-9._+-]/gi, '') || 'mail'}@${context.fallbackDomain}`;
  return { address, ...(asset.from_name !== undefined ? { name: asset.from_name } : {}) };
}

function splitAddress(address: string): [string, string] {
  const at = address.lastIndexOf('@');
  return [address.slice(0, at), address.slice(at + 1).toLowerCase()];
}

/** What the queue confirmed and the emails table stored, over all chunks of a request. */
interface Outcome {
  queued: Set<string>;
  written: Set<string>;
}

/**
 * Emails built, then queued and recorded together (2-3 queue batches; table batches: the
 * references, then the emails with their log entries and previews, 1 + 3).
 */
const BUILD_CHUNK = 25;
/**
 * Time kept to queue and record the last chunk: no email is built past it (or past the last
 * quarter of the time left when building starts, if that is less).
 */
const QUEUE_RESERVE_MS = 5_000;

/** The error of an email whose message the queue may hold but never confirmed. */
export const NOT_QUEUED =
  'the email queue did not confirm this email: it is not sent (send it again)';

/**
 * Queues the emails to send, then records every email: a record says `queued` only once its
 * message is in the queue, so that no email is left `queued` with nothing behind it, whatever
 * fails. A message whose queueing is uncertain (the queue's answer was lost) is recorded
 * `failed`, which its message, if it exists, then finds and does not send; a message whose
 * record cannot be written is dropped by the worker once `record_by` (this request's
 * deadline) has passed. A failure part-way answers 503 with what happened to each entry.
 */
async function queueAndRecord(
  records: NewEmail[],
  jobs: EmailJob[],
  context: SendContext,
  { queued, written }: Outcome,
): Promise<void> {
  if (records.length === 0) return;
  let failure: unknown;
  const recordBy = currentDeadline();
  await context.queue
    .send(
      jobs.map((job) => ({ ...job, record_by: recordBy })),
      (id) => queued.add(id),
    )
    .catch((error: unknown) => {
      failure = error;
    });
  const uncertain = failure instanceof MaybeQueuedError;
  const at = (context.now?.() ?? new Date()).toISOString();
  const toWrite = records.flatMap((record): NewEmail[] => {
    if (record.status !== 'queued' || queued.has(record.message_id)) return [record];
    if (!uncertain) return [];
    return [
      {
        ...record,
        status: 'failed',
        error: NOT_QUEUED,
        events: [...record.events, { type: 'failed', at, detail: NOT_QUEUED }],
      },
    ];
  });
  await context.emails
    .create(toWrite, (id) => written.add(id))
    .catch((error: unknown) => {
      failure ??= error;
    });
  if (failure !== undefined) throw failure as Error;
}

/**
 * The error of a request stopped part-way by the queue or the table (`failure`), once every
 * chunk started has settled: details says what became of each entry.
 */
function stoppedPartWay(
  failure: unknown,
  results: SendEntryResult[],
  { queued, written }: Outcome,
): unknown {
  const details = results.map((entry, index): ErrorDetail => {
    const id = entry.message_id;
    const done =
      id !== undefined &&
      written.has(id) &&
      (entry.email_status === 'suppressed' || (entry.email_status === 'queued' && queued.has(id)));
    const status = done ? entry.email_status : entry.person_id ? 'not_applied' : 'invalid';
    return {
      index,
      status,
      ...(entry.person_id ? { person_id: entry.person_id } : {}),
      ...(done && id ? { message_id: id } : {}),
    };
  });
  if (failure instanceof ServiceUnavailableError || !(failure instanceof CdpError)) {
    return new ServiceUnavailableError(
      'The email store or queue is unavailable: the request stopped part-way; details says which emails were queued (people were merged); send the others again shortly',
      details,
    );
  }
  return failure;
}

function everyEntryInvalid(results: SendEntryResult[]): ValidationError {
  const details = results.map((entry, index) => ({
    index,
    status: 'invalid',
    error: entry.error ?? 'invalid',
    ...(entry.person_id ? { person_id: entry.person_id } : {}),
  }));
  return new ValidationError(
    `No email was sent: every entry is invalid (${details[0]?.error ?? ''})`,
    details,
  );
}

/** An error of the merge of some entries, its details renumbered to the request's entries. */
function renumbered(error: unknown, indexes: number[]): unknown {
  if (!(error instanceof CdpError) || !error.details) return error;
  for (const detail of error.details) {
    if (detail.index !== undefined) detail.index = indexes[detail.index] ?? detail.index;
  }
  return error;
}
