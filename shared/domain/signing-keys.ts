import { randomBytes } from 'node:crypto';
import { z } from 'zod';

/**
 * The deployment's signing keys (paging cursors, email links): a keyring, each key named by
 * a key ID that every cursor and link token carries, so that keys can be rotated with an
 * overlap. A rotation adds a key that verifies at once but signs only from `active_from`
 * (after every function's cache has read it: `ACTIVATION_DELAY_MS`), so that no function
 * meets a token of a key it does not know yet; the key it replaces keeps verifying until its
 * `retire_at`. New tokens are signed with the newest active key. Keys are stored wrapped
 * (`KeyWrapper`: KMS on AWS, so that only functions allowed to decrypt with the region's key
 * can read them), never in plain form.
 *
 * Tokens and cursors made before key IDs existed carry none: they are the legacy key's,
 * `k0`, the secret the deployment had then, which the first `admin apply` of this version
 * wraps into the keyring (and removes in plain form). They verify while `k0` is not retired.
 */
export const LEGACY_KID = 'k0';

/** Key IDs: `k` and base-36 digits (`k0`, the legacy key; then the creation time). */
export const KID_PATTERN = /^k[0-9a-z]{1,12}$/;

/** How long functions keep the keyring they read (then they read it again). */
export const KEYRING_CACHE_MS = 5 * 60_000;
/** A new key signs only this long after it was added: every function knows it by then. */
export const ACTIVATION_DELAY_MS = 2 * KEYRING_CACHE_MS;

export const StoredSigningKey = z.object({
  kid: z.string().regex(KID_PATTERN),
  /** The secret, wrapped by the deployment's key wrapper. */
  wrapped: z.string().min(1),
  created_at: z.string(),
  /** From then on it signs new tokens (it verifies from the start). */
  active_from: z.string(),
  /** From then on its tokens are refused (absent: it has not been rotated out). */
  retire_at: z.string().optional(),
});
export type StoredSigningKey = z.infer<typeof StoredSigningKey>;

export const StoredKeyring = z.object({ keys: z.array(StoredSigningKey).min(1) });
export type StoredKeyring = z.infer<typeof StoredKeyring>;

export interface SigningKey {
  kid: string;
  secret: string;
}

/** The keys a function signs and verifies with. */
export interface Keyring {
  /** The key new tokens are signed with. */
  current: SigningKey;
  /** A key that may verify tokens now: in the ring and not retired. */
  find(kid: string): SigningKey | undefined;
}

/** Wraps and unwraps secrets with a key the deployment holds (KMS on AWS). */
/**
 * Wraps and unwraps secrets. `context` binds a wrapped secret to what it belongs to (KMS
 * encryption context; additional authenticated data locally): it unwraps only with the
 * same context, so a wrapped value copied elsewhere is useless.
 */
export interface KeyWrapper {
  wrap(secret: string, context?: Readonly<Record<string, string>>): Promise<string>;
  unwrap(wrapped: string, context?: Readonly<Record<string, string>>): Promise<string>;
}

/** A new secret: 256 random bits. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function newKid(now: Date): string {
  return `k${now.getTime().toString(36)}`;
}

const time = (iso: string | undefined) => (iso === undefined ? Infinity : Date.parse(iso));

/** The key that signs at `now`: the newest active one not retired. */
export function signingKeyOf(keys: readonly StoredSigningKey[], now: number) {
  return keys
    .filter((key) => time(key.active_from) <= now && time(key.retire_at) > now)
    .sort((a, b) => time(b.active_from) - time(a.active_from))[0];
}

/** The keyring of stored keys, unwrapped; which key signs, and which verify, follow `now`. */
export async function openKeyring(
  stored: StoredKeyring,
  wrapper: KeyWrapper,
  now: () => number = Date.now,
): Promise<Keyring> {
  const secrets = new Map(
    await Promise.all(
      stored.keys.map(async (key) => [key.kid, await wrapper.unwrap(key.wrapped)] as const),
    ),
  );
  const keyOf = (key: StoredSigningKey | undefined): SigningKey | undefined => {
    const secret = key && secrets.get(key.kid);
    return key && secret !== undefined ? { kid: key.kid, secret } : undefined;
  };
  return {
    get current() {
      const key = keyOf(signingKeyOf(stored.keys, now()));
      if (!key)
        throw new Error(
          'The signing keyring has no active key: run `npm run admin -- signing-key rotate`',
        );
      return key;
    },
    find: (kid) => {
      const key = stored.keys.find((candidate) => candidate.kid === kid);
      return key && time(key.retire_at) > now() ? keyOf(key) : undefined;
    },
  };
}

/** A keyring of one key (tests, and a deployment not migrated yet: its legacy secret). */
export function singleKeyring(secret: string, kid = LEGACY_KID): Keyring {
  const key = { kid, secret };
  return { current: key, find: (asked) => (asked === kid ? key : undefined) };
}

/** A new key for the keyring, wrapped, signing from `activeFrom`. */
export async function storedKey(
  wrapper: KeyWrapper,
  now: Date,
  activeFrom: Date,
  kid = newKid(now),
  secret = newSecret(),
): Promise<StoredSigningKey> {
  return {
    kid,
    wrapped: await wrapper.wrap(secret),
    created_at: now.toISOString(),
    active_from: activeFrom.toISOString(),
  };
}

/**
 * The stored keyring after a rotation: `fresh` signs from its `active_from`; the key signing
 * until then retires `overlapMs` after it (its tokens verify until then); keys already
 * retired are dropped.
 */
export function rotated(
  stored: StoredKeyring,
  fresh: StoredSigningKey,
  overlapMs: number,
  now: Date,
): StoredKeyring {
  const signing = signingKeyOf(stored.keys, now.getTime());
  const retireAt = new Date(time(fresh.active_from) + overlapMs).toISOString();
  const keys = stored.keys
    .filter((key) => time(key.retire_at) > now.getTime())
    .map((key) => {
      // The key signing now, and any that would have signed after it: replaced by `fresh`.
      const replaced = key.kid === signing?.kid || time(key.active_from) > now.getTime();
      return replaced && time(key.retire_at) > time(retireAt)
        ? { ...key, retire_at: retireAt }
        : key;
    });
  return { keys: [...keys, fresh] };
}

/**
 * The stored keyring with a key retired now (a key that leaked: its tokens stop verifying at
 * once, within a function's keyring cache). The key signing now cannot be: rotate first.
 */
export function retired(stored: StoredKeyring, kid: string, now: Date): StoredKeyring {
  if (signingKeyOf(stored.keys, now.getTime())?.kid === kid) {
    throw new Error(`${kid} is the signing key now: rotate first, then retire it`);
  }
  if (!stored.keys.some((key) => key.kid === kid)) throw new Error(`No signing key ${kid}`);
  return {
    keys: stored.keys.map((key) =>
      key.kid === kid ? { ...key, retire_at: now.toISOString() } : key,
    ),
  };
}
