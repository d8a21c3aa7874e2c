import { EMAIL_PERMISSION, SMS_PERMISSION, type Person } from './person.js';

/**
 * What each tag's counters count (`tags/get`): `count` the people holding the tag now
 * (archived people aside, as everywhere else), `subscribers` those of them subscribed to
 * email (`bol::p` true), `sms_opted_in` to SMS (`bol::sp` true). They are maintained by
 * the writes that change them, from the person as the write found it and as it leaves it:
 * a write is conditioned on what its counts depend on, so they are exact under concurrency.
 */
export interface TagCountDelta {
  count: number;
  subscribers: number;
  sms_opted_in: number;
}

/** What a person contributes to the counts of its tags. */
export interface TagHolder {
  tags: readonly string[];
  /** Not archived: archived people count nowhere. */
  counted: boolean;
  email: boolean;
  sms: boolean;
}

export function holderOf(person: Pick<Person, 'tags' | 'fields' | 'archived_at'>): TagHolder {
  return {
    tags: person.tags,
    counted: person.archived_at === undefined,
    email: person.fields[EMAIL_PERMISSION] === true,
    sms: person.fields[SMS_PERMISSION] === true,
  };
}

/** The same person, archived (or restored). */
export function withCounted(holder: TagHolder, counted: boolean): TagHolder {
  return { ...holder, counted };
}

function contribution(holder: TagHolder | undefined, tag: string): TagCountDelta {
  const held = holder !== undefined && holder.counted && holder.tags.includes(tag);
  return {
    count: held ? 1 : 0,
    subscribers: held && holder.email ? 1 : 0,
    sms_opted_in: held && holder.sms ? 1 : 0,
  };
}

/**
 * How a write changes the counts of each tag (tags it leaves unchanged left out): from the
 * person before (`undefined` for a new one) to after (`undefined` for one erased).
 */
export function tagCountDeltas(
  before: TagHolder | undefined,
  after: TagHolder | undefined,
): Map<string, TagCountDelta> {
  const deltas = new Map<string, TagCountDelta>();
  for (const tag of new Set([...(before?.tags ?? []), ...(after?.tags ?? [])])) {
    const was = contribution(before, tag);
    const is = contribution(after, tag);
    const delta = {
      count: is.count - was.count,
      subscribers: is.subscribers - was.subscribers,
      sms_opted_in: is.sms_opted_in - was.sms_opted_in,
    };
    if (delta.count !== 0 || delta.subscribers !== 0 || delta.sms_opted_in !== 0) {
      deltas.set(tag, delta);
    }
  }
  return deltas;
}
