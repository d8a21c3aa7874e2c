import { createHmac } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { LocalKeyWrapper } from '../../../shared/adapters/key-wrappers.js';
import { cursorCodec } from '../../../shared/domain/cursor.js';
import { LINK_TOKEN_DAYS, LinkSigner } from '../../../shared/domain/email/link-tokens.js';
import {
  ACTIVATION_DELAY_MS,
  LEGACY_KID,
  openKeyring,
  retired,
  rotated,
  storedKey,
  type StoredKeyring,
} from '../../../shared/domain/signing-keys.js';

/**
 * The signing keyring: key IDs in link tokens and cursors, rotation with an
 * overlap, and the tokens and cursors made before key IDs existed (the legacy secret, k0).
 */
const MESSAGE = '0123456789abcdef01234567';
const T0 = Date.parse('2026-05-01T00:00:00Z');
const wrapper = new LocalKeyWrapper();
const DAY = 86_400_000;

/** A link token as the code before key IDs made it: no key ID, no expiry. */
function legacyToken(secret: string, purpose: string, payload: string): string {
  const key = createHmac('sha256', secret).update('cdp email links v1').digest();
  const signature = createHmac('sha256', key)
    .update(`${purpose}:${payload}`)
    .digest()
    .subarray(0, 16);
  return `${Buffer.from(payload).toString('base64url')}.${signature.toString('base64url')}`;
}

/** A cursor as the code before key IDs made it: payload and tag only. */
function legacyCursor(secret: string, scope: string, value: unknown): string {
  const payload = Buffer.from(JSON.stringify(value)).toString('base64url');
  const tag = createHmac('sha256', secret).update(`${scope}\n${payload}`).digest().subarray(0, 16);
  return `${payload}.${tag.toString('base64url')}`;
}

async function keyringAt(stored: StoredKeyring, at: number) {
  return openKeyring(stored, wrapper, () => at);
}

describe('the signing keyring', () => {
  it('keeps tokens and cursors made before key IDs working as the legacy key k0', async () => {
    const legacySecret = 'the-secret-the-deployment-had-before-keyrings';
    const stored = {
      keys: [await storedKey(wrapper, new Date(T0), new Date(T0), LEGACY_KID, legacySecret)],
    };
    const keyring = await keyringAt(stored, T0);
    const old = legacyToken(legacySecret, 'click', `acme.${MESSAGE}.2`);
    expect(new LinkSigner(keyring, () => T0).verify('click', old)).toEqual({
      instanceId: 'acme',
      messageId: MESSAGE,
      index: 2,
      expired: false,
    });
    const cursor = legacyCursor(legacySecret, 'acme', { after: 'x' });
    expect(cursorCodec(keyring, 'acme').decode(z.object({ after: z.string() }), cursor)).toEqual({
      after: 'x',
    });
  });

  it('names the key in every token and cursor, and rotates with an overlap', async () => {
    const first = { keys: [await storedKey(wrapper, new Date(T0), new Date(T0), 'k1')] };
    const before = await keyringAt(first, T0);
    const token = new LinkSigner(before, () => T0).sign('open', {
      instanceId: 'acme',
      messageId: MESSAGE,
      index: 0,
    });
    expect(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString()).toMatch(/^2\.k1\./);
    const cursor = cursorCodec(before, 'acme').encode({ after: 'x' });
    expect(cursor.split('.')[0]).toBe('k1');

    // A rotation: the new key verifies at once but signs only once every function knows it;
    // the old one verifies for the overlap after that.
    const now = T0 + DAY;
    const fresh = await storedKey(
      wrapper,
      new Date(now),
      new Date(now + ACTIVATION_DELAY_MS),
      'k2',
    );
    const second = rotated(first, fresh, 30 * DAY, new Date(now));
    expect((await keyringAt(second, now)).current.kid).toBe('k1');
    const after = await keyringAt(second, now + ACTIVATION_DELAY_MS);
    expect(after.current.kid).toBe('k2');
    const schema = z.object({ after: z.string() });
    expect(new LinkSigner(after, () => now).verify('open', token)?.messageId).toBe(MESSAGE);
    expect(cursorCodec(after, 'acme').decode(schema, cursor)).toEqual({ after: 'x' });
    // Past the overlap, the old key's tokens and cursors are refused.
    const past = await keyringAt(second, now + ACTIVATION_DELAY_MS + 30 * DAY + 1);
    expect(new LinkSigner(past, () => now).verify('open', token)).toBeUndefined();
    expect(() => cursorCodec(past, 'acme').decode(schema, cursor)).toThrow(/cursor_id/);
    // A key retired at once (it leaked): refused from then on.
    const leaked = await keyringAt(
      retired(second, 'k1', new Date(now + ACTIVATION_DELAY_MS)),
      now + ACTIVATION_DELAY_MS + 1,
    );
    expect(new LinkSigner(leaked, () => now).verify('open', token)).toBeUndefined();
    expect(() => retired(second, 'k2', new Date(now + ACTIVATION_DELAY_MS))).toThrow(
      /rotate first/,
    );
  });

  it('expires link tokens a year after they were made', async () => {
    const keyring = await keyringAt(
      { keys: [await storedKey(wrapper, new Date(T0), new Date(T0), 'k1')] },
      T0,
    );
    const token = new LinkSigner(keyring, () => T0).sign('click', {
      instanceId: 'acme',
      messageId: MESSAGE,
      index: 1,
    });
    const at = (ms: number) => new LinkSigner(keyring, () => ms).verify('click', token)?.expired;
    expect(at(T0 + (LINK_TOKEN_DAYS - 1) * DAY)).toBe(false);
    expect(at(T0 + LINK_TOKEN_DAYS * DAY + 1_000)).toBe(true);
  });

  it('stores no secret in plain form', async () => {
    const key = await storedKey(wrapper, new Date(T0), new Date(T0), 'k1', 'plain-secret-value');
    expect(JSON.stringify(key)).not.toContain('plain-secret-value');
    expect(await wrapper.unwrap(key.wrapped)).toBe('plain-secret-value');
  });
});
