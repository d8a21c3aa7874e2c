/**
 * The periods of the real API's `timeframe` (`{"type": "last-7-days"}`): rolling ones end
 * now; calendar ones (today, this week, last month, …) are reckoned in the instance's time
 * zone, weeks from Monday, and end at the period's end (or now, for the current one).
 */
export const TIMEFRAMES = [
  'today',
  'yesterday',
  'last-24-hours',
  'last-7-days',
  'last-14-days',
  'last-30-days',
  'this-week',
  'this-month',
  'last-month',
  'this-quarter',
  'last-quarter',
  'this-year',
  'all',
] as const;
export type Timeframe = (typeof TIMEFRAMES)[number];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface LocalDate {
  year: number;
  month: number; // 1-12
  day: number;
  weekday: number; // 0 Monday … 6 Sunday
}

function formatter(timeZone: string): Intl.DateTimeFormat {
  try {
    return new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
    });
  } catch {
    // A zone of the spec's list this runtime does not know: reckoned in UTC.
    return formatter('UTC');
  }
}

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

function partsAt(instant: number, zone: Intl.DateTimeFormat) {
  const parts = Object.fromEntries(
    zone.formatToParts(new Date(instant)).map((part) => [part.type, part.value]),
  );
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
    weekday: WEEKDAYS.indexOf(parts.weekday ?? 'Mon'),
  };
}

/** How far the zone is ahead of UTC at `instant`, in milliseconds. */
function offsetAt(instant: number, zone: Intl.DateTimeFormat): number {
  const p = partsAt(instant, zone);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** The instant a local date's midnight falls on in the zone (months and days may overflow). */
function midnight(year: number, month: number, day: number, zone: Intl.DateTimeFormat): number {
  const wall = Date.UTC(year, month - 1, day);
  // Twice: the offset at the guess may differ from the offset at the answer (a DST change).
  const guess = wall - offsetAt(wall, zone);
  return wall - offsetAt(guess, zone);
}

function today(now: number, zone: Intl.DateTimeFormat): LocalDate {
  const { year, month, day, weekday } = partsAt(now, zone);
  return { year, month, day, weekday };
}

/** The instants `[from, to)` of a timeframe, as ISO strings (`{}` for `all`). */
export function timeframeRange(
  timeframe: Timeframe,
  now: number,
  timeZone: string,
): { from?: string; to?: string } {
  const zone = formatter(timeZone);
  const at = (instant: number) => new Date(instant).toISOString();
  const local = today(now, zone);
  const day = (offsetDays: number) =>
    midnight(local.year, local.month, local.day + offsetDays, zone);
  const quarterStart = local.month - ((local.month - 1) % 3);
  switch (timeframe) {
    case 'all':
      return {};
    case 'last-24-hours':
      return { from: at(now - DAY) };
    case 'last-7-days':
      return { from: at(now - 7 * DAY) };
    case 'last-14-days':
      return { from: at(now - 14 * DAY) };
    case 'last-30-days':
      return { from: at(now - 30 * DAY) };
    case 'today':
      return { from: at(day(0)) };
    case 'yesterday':
      return { from: at(day(-1)), to: at(day(0)) };
    case 'this-week':
      return { from: at(day(-local.weekday)) };
    case 'this-month':
      return { from: at(midnight(local.year, local.month, 1, zone)) };
    case 'last-month':
      return {
        from: at(midnight(local.year, local.month - 1, 1, zone)),
        to: at(midnight(local.year, local.month, 1, zone)),
      };
    case 'this-quarter':
      return { from: at(midnight(local.year, quarterStart, 1, zone)) };
    case 'last-quarter':
      return {
        from: at(midnight(local.year, quarterStart - 3, 1, zone)),
        to: at(midnight(local.year, quarterStart, 1, zone)),
      };
    case 'this-year':
      return { from: at(midnight(local.year, 1, 1, zone)) };
  }
}
