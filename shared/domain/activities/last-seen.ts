import { z } from 'zod';

/**
 * Last seen (`tme::last-seen`, and `geo::last-seen` where the activity had a place) follows
 * the person's activities whose definition tracks them as a touch. It is derived from the
 * activities table's stream, off the request path (docs/data-model.md, "Last seen"): an
 * activity is written with `touch: true`, and the last-seen worker moves its person's last
 * seen forward to the activity's time. The stream gives each activity at least once and
 * possibly late, so a move is conditioned on the stored time: it only ever moves forward,
 * and the same activity applied twice changes nothing more.
 */
export interface LastSeenStore {
  /**
   * Moves a person's last-seen time (and place) forward to `at`; never back, never on an
   * archived or deleted person. False when nothing moved (a later time is already stored).
   */
  touch(instanceId: string, personId: string, at: string, place?: string): Promise<boolean>;
}

export interface Touch {
  at: string;
  place?: string;
}

const Place = z.object({
  city: z.string().optional(),
  region: z.string().optional(),
  country: z.string().optional(),
  position_name: z.string().optional(),
});

/** The members of a stored activity that last seen reads (the others are ignored). */
const TouchingActivity = z.object({
  created_at: z.string(),
  touch: z.literal(true),
  location: Place.optional(),
});

/** The place last seen shows for an activity's resolved location ("City, Region, Country"). */
export function placeOf(location: z.infer<typeof Place> | undefined): string | undefined {
  const parts = [location?.city, location?.region, location?.country].filter(Boolean);
  return parts.length > 0 ? parts.join(', ') : location?.position_name;
}

/**
 * The latest touch among stored activities of one person (items of the activities table,
 * in any order); undefined when none tracks a touch. Of two at the same time the first
 * given wins, as a conditional move would keep the first applied.
 */
export function latestTouch(items: readonly unknown[]): Touch | undefined {
  let latest: Touch | undefined;
  for (const item of items) {
    const parsed = TouchingActivity.safeParse(item);
    if (!parsed.success) continue;
    if (latest && latest.at >= parsed.data.created_at) continue;
    const place = placeOf(parsed.data.location);
    latest = { at: parsed.data.created_at, ...(place ? { place } : {}) };
  }
  return latest;
}
