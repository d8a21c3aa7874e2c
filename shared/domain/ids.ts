import { createHash, randomBytes } from 'node:crypto';

/**
 * IDs of people, organizations and activities: 24 lowercase hex characters, time-ordered.
 * The first 12 hex digits are the creation time in milliseconds, the last 12 a random
 * number that is incremented (not redrawn) within the same millisecond, so IDs minted by
 * one process sort in the order they were made, and IDs of different processes sort by time.
 */
const RANDOM_SPACE = 2n ** 48n;

let lastMillis = -1;
let lastRandom = 0n;

export const ID_PATTERN = /^[0-9a-f]{24}$/;

export function newId(now: number = Date.now()): string {
  let millis = Math.max(now, lastMillis);
  if (millis === lastMillis) {
    lastRandom += 1n;
    if (lastRandom >= RANDOM_SPACE) {
      millis += 1;
      lastRandom = BigInt('0x' + randomBytes(6).toString('hex')) >> 1n;
    }
  } else {
    // Half the space, so that increments within one millisecond never wrap.
    lastRandom = BigInt('0x' + randomBytes(6).toString('hex')) >> 1n;
  }
  lastMillis = millis;
  return millis.toString(16).padStart(12, '0') + lastRandom.toString(16).padStart(12, '0');
}

export function isId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

/** The creation time an ID carries. */
export function idTime(id: string): Date {
  return new Date(parseInt(id.slice(0, 12), 16));
}

/**
 * A deterministic ID: the time of `at`, then 12 hex digits of a hash of `seed`. A queued
 * request applied twice gives its records the same IDs (so writing them again changes
 * nothing).
 */
export function derivedId(seed: string, at: number): string {
  const tail = createHash('sha256').update(seed).digest('hex').slice(0, 12);
  return Math.max(0, at).toString(16).padStart(12, '0') + tail;
}
