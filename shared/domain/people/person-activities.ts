import { z } from 'zod';
import { ENTER_ACTIVITY, EXIT_ACTIVITY } from '../audiences/membership.js';
import { MAX_OFFSET, type CursorCodec } from '../cursor.js';
import { EMAIL_ACTIVITIES } from '../email/email-activities.js';
import { ValidationError } from '../errors.js';
import { DEFAULT_TIME_ZONE } from '../fields/field-values.js';
import { ID_PATTERN } from '../ids.js';
import { PERMISSION_ACTIVITIES } from './person.js';
import { fingerprintOf, type OffsetCheckpoints } from './person-get.js';
import { timeframeRange, TIMEFRAMES } from './timeframes.js';

/**
 * `POST /v1/person/get/activities`: a person's activities, newest first, in the real API's
 * shape (`activities`, `meta`, `offset`, `next_offset`; docs/api.md). Pages by `offset`
 * (a page that continues where the previous one ended costs the same at any depth: its
 * position is kept) or by `cursor_id`; `timeframe` keeps those of a period, reckoned in the
 * instance's time zone.
 */
/** `{"type": "last-7-days"}` as the real API takes it; the bare name is accepted too. */
const TimeframeInput = z
  .preprocess(
    (value) => (typeof value === 'string' ? { type: value } : value),
    z.object(
      {
        type: z.enum(TIMEFRAMES, { error: `expected one of ${TIMEFRAMES.join(', ')}` }),
      },
      { error: 'expected an object {"type": "<period>"}, such as {"type": "last-7-days"}' },
    ),
  )
  .transform((value) => value.type);

const feedMembers = {
  limit: z.number().int().min(1).max(100).default(50),
  offset: z.number().int().min(0).default(0),
  timeframe: TimeframeInput.optional(),
  cursor_id: z.string().max(500).optional(),
  activities: z.array(z.string().min(1)).min(1).max(50).optional(),
};

export const PersonActivitiesRequest = z.object({
  person_id: z.string().regex(ID_PATTERN, 'expected a person ID (24 hexadecimal characters)'),
  ...feedMembers,
});
export type PersonActivitiesRequest = z.infer<typeof PersonActivitiesRequest>;

/** `POST /v1/accounts/get/activities`: an account's activities, in the same shape. */
export const AccountActivitiesRequest = z.object({
  account_id: z.string().regex(ID_PATTERN, 'expected an account ID (24 hexadecimal characters)'),
  ...feedMembers,
});
export type AccountActivitiesRequest = z.infer<typeof AccountActivitiesRequest>;

/** Whose feed: a person's (`person_id`) or an account's (`account_id`). */
export interface FeedSubject {
  member: 'person_id' | 'account_id';
  noun: 'person' | 'account';
}
const PERSON_FEED: FeedSubject = { member: 'person_id', noun: 'person' };

type FeedRequest = Omit<PersonActivitiesRequest, 'person_id'> & { person_id: string };

/** One part of an activity's line in a feed: text, and where it links (an audience). */
export interface RenderCommand {
  content: string;
  link?: string;
}

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

/** Which of a person's activities: of some definitions, in a time range (ISO instants). */
export interface ActivityQuery {
  fieldIds?: string[];
  from?: string;
  to?: string;
}

export interface ActivityReader {
  personExists(instanceId: string, personId: string): Promise<boolean>;
  /** Activities of a person older than `before` (a position), newest first. */
  activities(
    instanceId: string,
    personId: string,
    options: ActivityQuery & { limit: number; before?: string; skip?: number },
  ): Promise<{ activities: ActivityView[]; next?: string }>;
  /** How many there are, counting at most `max`. */
  countActivities(
    instanceId: string,
    personId: string,
    query: ActivityQuery,
    max: number,
  ): Promise<number>;
}

/** The most activities `meta.total_activities` counts (more: it says this many). */
export const MAX_COUNTED_ACTIVITIES = 1_000;

/**
 * Where a feed's next page starts, and the instants its `timeframe` stood for on its first
 * page: later pages keep them (a rolling "last 7 days" does not move under a client paging).
 */
const Cursor = z.object({
  v: z.literal(4),
  person: z.string(),
  listing: z.string(),
  before: z.string().min(1),
  total: z.number().int(),
  from: z.string().optional(),
  to: z.string().optional(),
});
type Cursor = z.infer<typeof Cursor>;

/** Built-in activities' lines (the real API's words where it records them). */
const BUILT_IN_TEXT: ReadonlyMap<string, string> = new Map([
  [PERMISSION_ACTIVITIES.emailSubscribed.activity, 'Subscribed to email'],
  [PERMISSION_ACTIVITIES.emailUnsubscribed.activity, 'Unsubscribed from email'],
  [PERMISSION_ACTIVITIES.smsSubscribed.activity, 'Subscribed to sms'],
  [PERMISSION_ACTIVITIES.smsUnsubscribed.activity, 'Unsubscribed from sms'],
  ...Object.values(EMAIL_ACTIVITIES).map(({ field_id, display }) => [field_id, display] as const),
]);

/**
 * An activity's line as the real API's `render_cmds`: a custom activity's display text (as
 * rendered when it was recorded, else its definition's name); a built-in one's words and a
 * full stop; entering or leaving an audience names the audience, linked to it in the console.
 */
export function renderCommands(
  activity: ActivityView,
  definitionName: (fieldId: string) => string | undefined,
): RenderCommand[] {
  if (activity.field_id === ENTER_ACTIVITY || activity.field_id === EXIT_ACTIVITY) {
    const name = activity.attr['str::name'];
    const audienceId = activity.attr['idt::a'];
    return [
      { content: activity.field_id === ENTER_ACTIVITY ? 'Entered audience' : 'Exited audience' },
      { content: ' ' },
      {
        content: typeof name === 'string' ? name : '',
        ...(typeof audienceId === 'string' ? { link: `/audiences/${audienceId}` } : {}),
      },
      { content: '.' },
    ];
  }
  if (activity.field_id.startsWith('act::')) {
    const text = activity.display ?? BUILT_IN_TEXT.get(activity.field_id) ?? activity.field_id;
    return text.endsWith('.') ? [{ content: text }] : [{ content: text }, { content: '.' }];
  }
  return [{ content: activity.display ?? definitionName(activity.field_id) ?? activity.field_id }];
}

export interface ActivityFeedPorts {
  reader: ActivityReader;
  cursors: CursorCodec;
  checkpoints?: OffsetCheckpoints;
  /** The instance's time zone (calendar timeframes) and its activity definitions' names. */
  timeZone?: string;
  definitionName?: (fieldId: string) => string | undefined;
  now?: () => number;
}

export async function getPersonActivities(
  request: FeedRequest,
  instanceId: string,
  ports: ActivityFeedPorts,
  subject: FeedSubject = PERSON_FEED,
) {
  const { reader, cursors } = ports;
  // The listing: the person and its settings (the timeframe by name).
  const listing = fingerprintOf({
    v: 2,
    person: request.person_id,
    activities: request.activities ?? null,
    timeframe: request.timeframe ?? null,
  });
  const start = await startOf(request, listing, instanceId, ports, subject);
  // A page that continues one keeps its timeframe's instants; a first page reckons them now.
  const range =
    start.range ??
    (request.timeframe
      ? timeframeRange(
          request.timeframe,
          (ports.now ?? Date.now)(),
          ports.timeZone ?? DEFAULT_TIME_ZONE,
        )
      : {});
  const query: ActivityQuery = {
    ...(request.activities ? { fieldIds: request.activities } : {}),
    ...range,
  };
  if (!(await reader.personExists(instanceId, request.person_id))) {
    throw new ValidationError(
      `${subject.member}: no ${subject.noun} ${request.person_id} in this instance`,
      [{ field: subject.member, error: 'not found' }],
    );
  }
  const [page, counted] = await Promise.all([
    reader.activities(instanceId, request.person_id, {
      ...query,
      limit: request.limit,
      ...(start.before ? { before: start.before } : {}),
      ...(start.skip > 0 ? { skip: start.skip } : {}),
    }),
    start.total ??
      reader.countActivities(instanceId, request.person_id, query, MAX_COUNTED_ACTIVITIES),
  ]);
  const nextOffset = request.offset + page.activities.length;
  // Never fewer than the feed has shown (the count may have missed one a moment old).
  const total = Math.max(counted, nextOffset + (page.next ? 1 : 0));
  let cursorId: string | null = null;
  if (page.next) {
    const cursor: Cursor = {
      v: 4,
      person: request.person_id,
      listing,
      before: page.next,
      total,
      ...(range.from === undefined ? {} : { from: range.from }),
      ...(range.to === undefined ? {} : { to: range.to }),
    };
    cursorId = await cursors.encode(cursor);
    if (request.cursor_id === undefined && ports.checkpoints) {
      await ports.checkpoints.save(instanceId, listing, nextOffset, cursors.signed.encode(cursor));
    }
  }
  const definitionName = ports.definitionName ?? (() => undefined);
  return {
    activities: page.activities.map((activity) => ({
      ...activity,
      render_cmds: renderCommands(activity, definitionName),
    })),
    meta: {
      total_activities: total,
      field_ids: request.activities ?? null,
      has_more: page.next !== undefined,
      // Activities are kept until the person is erased: no retention period.
      retention: { type: 'none', max_value: 0 },
    },
    offset: request.offset,
    next_offset: nextOffset,
    cursor_id: cursorId,
    has_more: page.next !== undefined,
  };
}

/**
 * Where a page starts: a cursor's position; else the nearest position this listing kept at
 * or before `offset` (the end of an earlier page), walking at most `MAX_OFFSET` from it.
 */
async function startOf(
  request: FeedRequest,
  listing: string,
  instanceId: string,
  ports: ActivityFeedPorts,
  subject: FeedSubject,
): Promise<{
  before?: string;
  skip: number;
  total?: number;
  range?: { from?: string; to?: string };
}> {
  if (request.cursor_id !== undefined) {
    const cursor = await ports.cursors.decode(Cursor, request.cursor_id);
    if (cursor.person !== request.person_id || cursor.listing !== listing) {
      throw new ValidationError(
        `cursor_id: it was issued for another ${subject.noun} or other settings (send ${subject.member}, activities and timeframe as for the first page)`,
        [{ field: 'cursor_id', error: 'issued for another listing' }],
      );
    }
    return { before: cursor.before, skip: 0, total: cursor.total, range: rangeOf(cursor) };
  }
  if (request.offset === 0) return { skip: 0 };
  const known = await ports.checkpoints?.nearest(instanceId, listing, request.offset);
  let cursor: Cursor | undefined;
  try {
    cursor = known ? ports.cursors.signed.decode(Cursor, known.cursor) : undefined;
  } catch {
    // A position signed with a key retired since: as if there were none.
  }
  const from = cursor ? (known?.offset ?? 0) : 0;
  const skip = request.offset - from;
  if (skip > MAX_OFFSET) {
    throw new ValidationError(
      `offset: ${request.offset} is more than ${MAX_OFFSET} past where this feed was last paged to; page on by next_offset from the previous page, or with cursor_id`,
      [{ field: 'offset', error: `over ${MAX_OFFSET} past the nearest known position` }],
    );
  }
  return cursor
    ? { before: cursor.before, skip, total: cursor.total, range: rangeOf(cursor) }
    : { skip };
}

const rangeOf = (cursor: Cursor) => ({
  ...(cursor.from === undefined ? {} : { from: cursor.from }),
  ...(cursor.to === undefined ? {} : { to: cursor.to }),
});
