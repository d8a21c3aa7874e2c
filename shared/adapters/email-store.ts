import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { ActivityToWrite } from '../domain/activities/record-activities.js';
import type { Acceptance } from '../domain/email/deliver.js';
import {
  EMAIL_RETENTION_DAYS,
  EmailRecord,
  PREVIEW_RETENTION_DAYS,
  type EmailEvent,
  type EmailLog,
  type EmailLogPage,
  type EmailLogQuery,
  type EmailState,
  type EmailStore,
  type NewEmail,
} from '../domain/email/messages.js';
import { logger } from '../lib/logger.js';
import type { EmailTally } from '../domain/email/email-tallies.js';
import { activityItem } from './activity-store.js';
import { tallyUpdate } from './email-tallies.js';
import {
  batchGet,
  batchWrite,
  cancellationCodes,
  conditionally,
  isConditionFailure,
} from './dynamo-helpers.js';
import { referencePk, referencePuts } from './person-references.js';

/**
 * The `emails` table (docs/data-model.md): one item per email, `<inst>#M#<message_id>` / `M`,
 * and one per suppressed address, `<inst>#SUP#<sha256 of the lower-cased address>` / `SUP`
 * (the address itself is not kept there). Every state move is conditioned on the state it
 * leaves, so that workers running twice, or out of order, cannot undo each other.
 */
export const messageKey = (instanceId: string, messageId: string) => ({
  pk: `${instanceId}#M#${messageId}`,
  sk: 'M',
});

/**
 * The instance's log of emails: `<inst>#ML#<shard>` / `<message_id>` (IDs sort by time), one
 * small item per email written in the same batch as the email, so that "the newest emails"
 * is a bounded query per shard instead of a scan. Shards (by the ID's random tail) keep an
 * instance sending fast from a hot partition.
 */
export const LOG_SHARDS = 8;
export const messageLogKey = (instanceId: string, messageId: string) => {
  const tail = parseInt(messageId.slice(-2), 16);
  return {
    pk: `${instanceId}#ML#${Number.isNaN(tail) ? 0 : tail % LOG_SHARDS}`,
    sk: messageId,
  };
};

/** An email's rendered HTML for the console's preview (gzipped), beside its record. */
export const messagePreviewKey = (instanceId: string, messageId: string) => ({
  pk: `${instanceId}#M#${messageId}`,
  sk: 'HTML',
});

/** What a preview item may hold, gzipped (an item is at most 400 KB). */
const PREVIEW_MAX_BYTES = 300_000;

export function addressHash(address: string): string {
  return createHash('sha256').update(address.trim().toLowerCase()).digest('hex');
}

const suppressionKey = (instanceId: string, address: string) => ({
  pk: `${instanceId}#SUP#${addressHash(address)}`,
  sk: 'SUP',
});

/**
 * The deployment's SES events watermark: not an instance's item (no instance ID is empty, so
 * none can lead with `#`), the one item of the table that is not.
 */
const EVENTS_WATERMARK = { pk: '#DEPLOYMENT', sk: 'SES_EVENTS' };

/** Events kept per email (opens and clicks can repeat without end; activities keep them all). */
export const MAX_EVENTS = 100;

export class DynamoEmailStore implements EmailStore, EmailLog {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { emails: string; activities?: string },
  ) {}

  async suppressed(instanceId: string, addresses: string[]): Promise<Set<string>> {
    if (addresses.length === 0) return new Set();
    const byHash = new Map(addresses.map((address) => [addressHash(address), address]));
    const items = await batchGet(
      this.db,
      this.tables.emails,
      addresses.map((address) => suppressionKey(instanceId, address)),
      true,
    );
    const found = new Set<string>();
    for (const item of items) {
      const hash = String(item.pk).split('#SUP#')[1] ?? '';
      const address = byHash.get(hash);
      if (address) found.add(address.trim().toLowerCase());
    }
    return found;
  }

  async suppress(
    instanceId: string,
    address: string,
    reason: 'bounce' | 'complaint',
    messageId: string,
    at: string,
  ): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tables.emails,
        Item: { ...suppressionKey(instanceId, address), reason, message_id: messageId, at },
      }),
    );
  }

  async create(records: NewEmail[], written: (messageId: string) => void): Promise<void> {
    const expires = Math.floor(Date.now() / 1000) + EMAIL_RETENTION_DAYS * 86_400;
    const previewExpires = Math.floor(Date.now() / 1000) + PREVIEW_RETENTION_DAYS * 86_400;
    // The references first, in batches of their own: an email is never stored without the
    // reference erasure finds it by (a batch is not atomic, and one that stops part-way
    // would leave an email written and its reference not).
    await batchWrite(
      this.db,
      this.tables.emails,
      records.flatMap((record) =>
        referencePuts(record.instance_id, [record.person_id], `M#${record.message_id}`, expires),
      ),
    );
    // Each email after its place in the instance's log and its preview, in the same batches
    // (one after the other): an email reported written has both.
    await batchWrite(
      this.db,
      this.tables.emails,
      records.flatMap(({ preview_html: html, ...record }) => {
        const zipped = html === undefined ? undefined : gzipSync(html);
        return [
          {
            PutRequest: {
              Item: {
                ...messageLogKey(record.instance_id, record.message_id),
                expires_at: expires,
              },
            },
          },
          ...(zipped
            ? [
                {
                  PutRequest: {
                    Item: {
                      ...messagePreviewKey(record.instance_id, record.message_id),
                      ...(zipped.length <= PREVIEW_MAX_BYTES
                        ? { html: zipped }
                        : { omitted: 'too large' }),
                      expires_at: previewExpires,
                    },
                  },
                },
              ]
            : []),
          {
            PutRequest: {
              Item: {
                ...messageKey(record.instance_id, record.message_id),
                ...record,
                expires_at: expires,
              },
            },
          },
        ];
      }),
      (done) => {
        for (const request of done) {
          if ('PutRequest' in request && request.PutRequest.Item.sk === 'M') {
            written(String(request.PutRequest.Item.message_id));
          }
        }
      },
    );
  }

  async recent(instanceId: string, query: EmailLogQuery) {
    const shards = await Promise.all(
      Array.from({ length: LOG_SHARDS }, (_, shard) =>
        this.newestKeys(`${instanceId}#ML#${shard}`, '', query),
      ),
    );
    return this.page(instanceId, shards.flat(), query.limit);
  }

  async ofPerson(instanceId: string, personId: string, query: EmailLogQuery) {
    const ids = await this.newestKeys(referencePk(instanceId, personId), 'M#', query);
    return this.page(instanceId, ids, query.limit);
  }

  async preview(instanceId: string, messageId: string): Promise<string | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tables.emails,
        Key: messagePreviewKey(instanceId, messageId),
      }),
    );
    const html: unknown = Item?.html;
    return html instanceof Uint8Array ? gunzipSync(html).toString('utf8') : undefined;
  }

  /**
   * Up to `limit + 1` message IDs of one partition (its sort keys `<prefix><message_id>`)
   * older than `before`, newest first.
   */
  private async newestKeys(pk: string, prefix: string, query: EmailLogQuery): Promise<string[]> {
    const values: Record<string, string> = { ':pk': pk };
    let condition = 'pk = :pk';
    if (query.before !== undefined) {
      values[':before'] = `${prefix}${query.before}`;
      condition += prefix ? ' AND sk BETWEEN :prefix AND :before' : ' AND sk < :before';
    } else if (prefix) {
      condition += ' AND begins_with(sk, :prefix)';
    }
    if (prefix) values[':prefix'] = prefix;
    const { Items = [] } = await this.db.send(
      new QueryCommand({
        TableName: this.tables.emails,
        KeyConditionExpression: condition,
        ExpressionAttributeValues: values,
        ProjectionExpression: 'sk',
        ScanIndexForward: false,
        // BETWEEN is inclusive: one more, for the position itself (dropped below).
        Limit: query.limit + 2,
      }),
    );
    return Items.map((item) => String(item.sk).slice(prefix.length)).filter(
      (id) => /^[0-9a-f]{24}$/.test(id) && id !== query.before,
    );
  }

  /** The newest `limit` of `ids` as records (one batch read); an erased one is left out. */
  private async page(instanceId: string, ids: string[], limit: number): Promise<EmailLogPage> {
    const newest = [...new Set(ids)].sort().reverse();
    const chosen = newest.slice(0, limit);
    const found = await this.get(instanceId, chosen);
    const last = chosen.at(-1);
    return {
      records: chosen.flatMap((id) => found.get(id) ?? []),
      ...(newest.length > limit && last !== undefined ? { next: last } : {}),
    };
  }

  async get(instanceId: string, messageIds: string[]): Promise<Map<string, EmailRecord>> {
    const items = await batchGet(
      this.db,
      this.tables.emails,
      [...new Set(messageIds)].map((id) => messageKey(instanceId, id)),
      true,
    );
    const records = new Map<string, EmailRecord>();
    for (const item of items) {
      const record = EmailRecord.parse(item);
      // The key leads with the instance; this is a second lock on the door.
      if (record.instance_id === instanceId) records.set(record.message_id, record);
    }
    return records;
  }

  /**
   * Moves an email from one of `from` to `to`, appending the matching event; false when it
   * was not in one of `from` (another attempt moved it first).
   */
  async move(
    instanceId: string,
    messageId: string,
    from: EmailState[],
    to: EmailState,
    extra: {
      error?: string;
      event?: EmailEvent;
      set?: Record<string, unknown>;
      /** Only while this send attempt holds the email. */
      attempt?: string;
    } = {},
  ): Promise<boolean> {
    const at = new Date().toISOString();
    const values: Record<string, unknown> = {
      ':to': to,
      ':at': at,
      ':event': [extra.event ?? { type: to, at, ...(extra.error ? { detail: extra.error } : {}) }],
      ':none': [],
    };
    const set = [
      '#status = :to',
      'updated_at = :at',
      'events = list_append(if_not_exists(events, :none), :event)',
    ];
    if (extra.error !== undefined) {
      set.push('#error = :error');
      values[':error'] = extra.error;
    }
    for (const [name, value] of Object.entries(extra.set ?? {})) {
      set.push(`${name} = :${name}`);
      values[`:${name}`] = value;
    }
    const froms = from.map((state, i) => {
      values[`:from${i}`] = state;
      return `:from${i}`;
    });
    let condition = `#status IN (${froms.join(', ')})`;
    if (extra.attempt !== undefined) {
      condition += ' AND attempt = :attempt';
      values[':attempt'] = extra.attempt;
    }
    return conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.tables.emails,
        Key: messageKey(instanceId, messageId),
        UpdateExpression: `SET ${set.join(', ')}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: {
          '#status': 'status',
          ...(extra.error !== undefined ? { '#error': 'error' } : {}),
        },
        ExpressionAttributeValues: values,
      }),
    );
  }

  /**
   * Takes a queued email for one send attempt, answering its record as the claim left it (no
   * read before the claim); undefined if it is not queued (or not there).
   */
  async claim(
    instanceId: string,
    messageId: string,
    attempt: string,
    now: number,
  ): Promise<EmailRecord | undefined> {
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tables.emails,
          Key: messageKey(instanceId, messageId),
          UpdateExpression:
            'SET #status = :sending, attempt = :attempt, sending_at = :now, updated_at = :at',
          ConditionExpression: '#status = :queued',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':sending': 'sending',
            ':queued': 'queued',
            ':attempt': attempt,
            ':now': now,
            ':at': new Date(now).toISOString(),
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return EmailRecord.parse(Attributes);
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  /** Gives an attempt's email back to the queue (SES refused it: nothing was sent). */
  async release(instanceId: string, messageId: string, attempt: string): Promise<void> {
    // A failed condition: the email moved on; nothing to do.
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.tables.emails,
        Key: messageKey(instanceId, messageId),
        UpdateExpression: 'SET #status = :queued REMOVE attempt, sending_at',
        ConditionExpression: '#status = :sending AND attempt = :attempt',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':sending': 'sending',
          ':queued': 'queued',
          ':attempt': attempt,
        },
      }),
    );
  }

  /**
   * Marks a send attempt's outcome unknown: the attempt is over, the email stays `sending`
   * until SES's event (or the end of the confirmation window) settles it. False when the
   * attempt no longer holds the email (an event settled it first).
   */
  async markUnknown(instanceId: string, messageId: string, attempt: string, at: number) {
    const when = new Date(at).toISOString();
    return conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.tables.emails,
        Key: messageKey(instanceId, messageId),
        UpdateExpression:
          'SET unknown_at = :at, updated_at = :when, events = list_append(events, :event)',
        ConditionExpression:
          '#status = :sending AND attempt = :attempt AND attribute_not_exists(unknown_at)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':sending': 'sending',
          ':attempt': attempt,
          ':at': at,
          ':when': when,
          ':event': [
            {
              type: 'send_unknown',
              at: when,
              detail: 'the send attempt did not learn whether SES took the email; waiting for SES',
            },
          ],
        },
      }),
    );
  }

  /**
   * Records that SES took the email (deliver.ts, `acceptanceOf`): its SES message ID, a
   * `sent` event, `sent` as its state where `promote`, the `act::s` activity and the day's
   * `sent` counter, in one transaction, conditioned on the email being as it was read (its
   * state, no SES message ID yet, and the attempt where given): counted once. False when it
   * was not.
   */
  async recordAcceptance(
    instanceId: string,
    messageId: string,
    acceptance: Acceptance,
  ): Promise<boolean> {
    const at = acceptance.activity?.created_at ?? new Date().toISOString();
    const values: Record<string, unknown> = {
      ':expected': acceptance.expected,
      ':ses': acceptance.sesMessageId,
      ':at': new Date().toISOString(),
      ':event': [{ type: 'sent', at }],
      ':none': [],
    };
    let set =
      'ses_message_id = :ses, updated_at = :at, events = list_append(if_not_exists(events, :none), :event)';
    if (acceptance.promote) {
      set += ', #status = :sent';
      values[':sent'] = 'sent';
    }
    let condition = '#status = :expected AND attribute_not_exists(ses_message_id)';
    if (acceptance.attempt !== undefined) {
      condition += ' AND attempt = :attempt';
      values[':attempt'] = acceptance.attempt;
    }
    const update = {
      Update: {
        TableName: this.tables.emails,
        Key: messageKey(instanceId, messageId),
        UpdateExpression: `SET ${set}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: values,
      },
    };
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            update,
            tallyUpdate(this.tables.emails, instanceId, 'sent', new Date(at)),
            ...(acceptance.activity
              ? [
                  {
                    Put: {
                      TableName: this.activitiesTable(),
                      Item: activityItem(instanceId, acceptance.activity),
                    },
                  },
                ]
              : []),
          ],
        }),
      );
      return true;
    } catch (error) {
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /**
   * Records the activity of an email event (an SES event, a click, an open) only while its
   * email exists: the activity's put and a check of the email item (`str::message-id`) in one
   * transaction. Erasure deletes a person's emails before their timeline, so an event handled
   * while the person is erased either lands before the timeline is read, or finds no email and
   * records nothing, instead of writing an activity no later erasure could find. Answers
   * whether it was recorded (a repeated event puts the same item again: its ID derives from
   * the event).
   */
  async recordActivity(instanceId: string, activity: ActivityToWrite): Promise<boolean> {
    const messageId = activity.attr['str::message-id'];
    if (typeof messageId !== 'string') {
      throw new Error(`an email activity without its message ID (${activity.field_id})`);
    }
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: { TableName: this.activitiesTable(), Item: activityItem(instanceId, activity) },
            },
            {
              ConditionCheck: {
                TableName: this.tables.emails,
                Key: messageKey(instanceId, messageId),
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (cancellationCodes(error)?.[1] !== 'ConditionalCheckFailed') throw error;
      logger.info('Email event not recorded: its email was erased meanwhile', {
        instance: instanceId,
        messageId,
      });
      return false;
    }
  }

  /**
   * Appends an event at most once per `key` (SES events are delivered at least once), and
   * moves the state where `to` is given and the email is in one of `from`. False when the
   * event was already recorded. `tally` is the day's counter it adds one to, in the same
   * transaction: only when the event is recorded, so once.
   */
  async recordEvent(
    instanceId: string,
    messageId: string,
    key: string,
    event: EmailEvent,
    move?: { from: EmailState[]; to: EmailState; error?: string },
    tally?: EmailTally,
  ): Promise<boolean> {
    const values: Record<string, unknown> = {
      ':key': new Set([key]),
      ':keyValue': key,
      ':event': [event],
      ':at': event.at,
    };
    const names: Record<string, string> = { '#seen': 'seen' };
    let set = 'updated_at = :at, events = list_append(events, :event)';
    let condition = 'attribute_exists(pk) AND NOT contains(#seen, :keyValue)';
    if (move) {
      names['#status'] = 'status';
      values[':to'] = move.to;
      set += ', #status = :to';
      if (move.error !== undefined) {
        names['#error'] = 'error';
        values[':error'] = move.error;
        set += ', #error = :error';
      }
      const froms = move.from.map((state, i) => {
        values[`:from${i}`] = state;
        return `:from${i}`;
      });
      condition += ` AND #status IN (${froms.join(', ')})`;
    } else {
      values[':max'] = MAX_EVENTS;
      condition += ' AND size(events) < :max';
    }
    const update = {
      TableName: this.tables.emails,
      Key: messageKey(instanceId, messageId),
      UpdateExpression: `SET ${set} ADD #seen :key`,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    };
    if (!tally) return conditionally(this.db, new UpdateCommand(update));
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            { Update: update },
            tallyUpdate(this.tables.emails, instanceId, tally, new Date(event.at)),
          ],
        }),
      );
      return true;
    } catch (error) {
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /**
   * Records an open or a click and its activity unless one was recorded in `window` already
   * (`eng_<marker>` holds the last window): one transaction, conditioned on the window, so
   * that replays of a link within it write nothing. False for a replay (or an email gone).
   */
  async recordEngagement(
    instanceId: string,
    messageId: string,
    marker: string,
    window: number,
    activity: ActivityToWrite,
  ): Promise<boolean> {
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tables.emails,
                Key: messageKey(instanceId, messageId),
                UpdateExpression: 'SET #window = :window',
                ConditionExpression:
                  'attribute_exists(pk) AND (attribute_not_exists(#window) OR #window < :window)',
                ExpressionAttributeNames: { '#window': `eng_${marker}` },
                ExpressionAttributeValues: { ':window': window },
              },
            },
            {
              Put: { TableName: this.activitiesTable(), Item: activityItem(instanceId, activity) },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /** Appends an event (an open or a click), while the email has fewer than MAX_EVENTS. */
  async addEvent(instanceId: string, messageId: string, event: EmailEvent): Promise<void> {
    // A failed condition: the email moved on; nothing to do.
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.tables.emails,
        Key: messageKey(instanceId, messageId),
        UpdateExpression: 'SET events = list_append(events, :event)',
        ConditionExpression: 'attribute_exists(pk) AND size(events) < :max',
        ExpressionAttributeValues: { ':event': [event], ':max': MAX_EVENTS },
      }),
    );
  }

  /**
   * SES's acceptance time (epoch ms) of the latest send whose `Send` event was applied
   * (deliver.ts, `SendConfirmations`). Strongly consistent: a resend rests on it.
   */
  async sendEventsThrough(): Promise<number | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tables.emails,
        Key: EVENTS_WATERMARK,
        ConsistentRead: true,
      }),
    );
    return typeof Item?.send_through === 'number' ? Item.send_through : undefined;
  }

  /** Moves the watermark to `at`, never back (a failed condition: it was already past it). */
  async advanceSendEvents(at: number): Promise<void> {
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.tables.emails,
        Key: EVENTS_WATERMARK,
        UpdateExpression: 'SET send_through = :at',
        ConditionExpression: 'attribute_not_exists(send_through) OR send_through < :at',
        ExpressionAttributeValues: { ':at': at },
      }),
    );
  }

  private activitiesTable(): string {
    if (!this.tables.activities) throw new Error('DynamoEmailStore needs the activities table');
    return this.tables.activities;
  }
}
