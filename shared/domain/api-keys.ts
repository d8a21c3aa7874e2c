import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isRegion, type Region } from './regions.js';

/**
 * API keys. Minted keys look like `cdp_au_<43 characters>` so that a regional API can tell a
 * key of another region from an unknown one without any lookup. Keys are stored only as the
 * SHA-256 of the key; the plaintext is shown once, when it is minted.
 */
const KEY_PATTERN = /^cdp_([a-z]+)_[A-Za-z0-9_-]{43}$/;

export function mintApiKey(region: Region): string {
  return `cdp_${region}_${randomBytes(32).toString('base64url')}`;
}

/** The region a minted key names, or `undefined` for keys of any other shape (e.g. from a file). */
export function regionOfApiKey(key: string): Region | undefined {
  const region = KEY_PATTERN.exec(key)?.[1];
  return isRegion(region) ? region : undefined;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented key with a stored hash. */
export function apiKeyMatches(key: string, storedHash: string): boolean {
  const presented = Buffer.from(hashApiKey(key), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
