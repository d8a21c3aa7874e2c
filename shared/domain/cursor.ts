import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from './errors.js';
import { LEGACY_KID, type Keyring } from './signing-keys.js';

/**
 * Paging cursors. What a client gets as `cursor_id` is a 24-character hexadecimal ID, the
 * shape of the real API's: it names the page's state, kept server-side for `CURSOR_KEEP_HOURS`
 * and bound to the instance and the listing (`CursorStore`). The state itself is signed
 * (`SignedCursors`): the ID of the key that signed it, base64url JSON, and an HMAC-SHA256 tag
 * over the instance ID and that JSON, made with that key of the deployment's keyring
 * (signing-keys.ts), so it cannot be forged or altered, and survives a key rotation for as
 * long as its key is not retired. Signed cursors given out before IDs (`<kid>.<json>.<tag>`)
 * stay accepted. Anything else is a 400 naming `cursor_id`.
 */
export interface SignedCursors {
  encode(value: unknown): string;
  decode<S extends z.ZodType>(schema: S, cursor: string): z.infer<S>;
}

/** The cursors of one listing of one instance. */
export interface CursorCodec {
  /** The `cursor_id` of a page's state: 24 hexadecimal characters. */
  encode(value: unknown): Promise<string>;
  decode<S extends z.ZodType>(schema: S, cursorId: string): Promise<z.infer<S>>;
  /** The state signed whole, for positions the service keeps itself (they outlive IDs). */
  readonly signed: SignedCursors;
}

/** A listing's page state kept under its ID (the requests table, docs/data-model.md). */
export interface StoredCursor {
  listing: string;
  token: string;
  /** Unix seconds. */
  expires_at: number;
}

export interface CursorStore {
  put(instanceId: string, id: string, cursor: StoredCursor): Promise<void>;
  get(instanceId: string, id: string): Promise<StoredCursor | undefined>;
}

/** How long a `cursor_id` names its page after it was answered. */
export const CURSOR_KEEP_HOURS = 24;

const TAG_BYTES = 16;
const ID_BYTES = 12;
const CURSOR_ID = /^[0-9a-f]{24}$/;

function refused(): ValidationError {
  return new ValidationError(
    'cursor_id: not a cursor this API issued for this listing (send the cursor_id of the previous page, unchanged)',
    [{ field: 'cursor_id', error: 'not a valid cursor' }],
  );
}

/** Signed cursors valid only for `scope` (the instance ID) under `keyring`. */
export function cursorCodec(keyring: Keyring, scope: string): SignedCursors {
  const tag = (secret: string, payload: string) =>
    createHmac('sha256', secret).update(`${scope}\n${payload}`).digest().subarray(0, TAG_BYTES);
  return {
    encode(value) {
      const { kid, secret } = keyring.current;
      const payload = Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
      return `${kid}.${payload}.${tag(secret, payload).toString('base64url')}`;
    },
    decode(schema, cursor) {
      const parts = cursor.split('.');
      const [kid, payload, signature] = parts.length === 2 ? [LEGACY_KID, ...parts] : parts;
      if (parts.length > 3 || !kid || !payload || !signature) throw refused();
      const key = keyring.find(kid);
      if (!key) throw refused();
      const given = Buffer.from(signature, 'base64url');
      if (given.length !== TAG_BYTES || !timingSafeEqual(given, tag(key.secret, payload))) {
        throw refused();
      }
      try {
        const parsed = schema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString()));
        if (parsed.success) return parsed.data;
      } catch {
        // reported below
      }
      throw refused();
    },
  };
}

/**
 * The cursors of `listing` (`person/get`, …) for instance `scope`: IDs of 12 random bytes
 * in hexadecimal, each naming the signed state it was answered with.
 */
export function issuedCursors(
  keyring: Keyring,
  scope: string,
  listing: string,
  store: CursorStore,
  now: () => number = Date.now,
): CursorCodec {
  const signed = cursorCodec(keyring, scope);
  return {
    signed,
    async encode(value) {
      const id = randomBytes(ID_BYTES).toString('hex');
      const expiresAt = Math.floor(now() / 1000) + CURSOR_KEEP_HOURS * 3600;
      await store.put(scope, id, { listing, token: signed.encode(value), expires_at: expiresAt });
      return id;
    },
    async decode(schema, cursorId) {
      if (cursorId.includes('.')) return signed.decode(schema, cursorId);
      if (cursorId.length !== 2 * ID_BYTES && cursorId.length !== ID_BYTES) {
        // The real API's answer to an ID of another length.
        throw new ValidationError('cursor_id: the length must be 12 or 24', [
          { field: 'cursor_id', error: 'the length must be 12 or 24' },
        ]);
      }
      const id = cursorId.toLowerCase();
      if (!CURSOR_ID.test(id)) throw refused();
      const kept = await store.get(scope, id);
      if (!kept || kept.listing !== listing) throw refused();
      if (kept.expires_at * 1000 <= now()) {
        throw new ValidationError(
          `cursor_id: expired (a cursor names its page for ${CURSOR_KEEP_HOURS} hours); start again without cursor_id`,
          [{ field: 'cursor_id', error: 'expired' }],
        );
      }
      return signed.decode(schema, kept.token);
    },
  };
}

/** Cursors kept in memory (tests, and a process with no table). */
export function memoryCursorStore(): CursorStore {
  const kept = new Map<string, StoredCursor>();
  return {
    put: (instanceId, id, cursor) => {
      kept.set(`${instanceId}\n${id}`, cursor);
      return Promise.resolve();
    },
    get: (instanceId, id) => Promise.resolve(kept.get(`${instanceId}\n${id}`)),
  };
}

/**
 * The deepest `offset` a listing walks from its start: an offset without a cursor reads
 * `offset + limit` index keys from each of the 16 shards (at most 16 × 10,100 keys, about
 * 1.6 MB of keys, here), while a cursor costs the same at any depth.
 */
export const MAX_OFFSET = 10_000;

/** Refuses an offset deeper than `MAX_OFFSET` unless a cursor says where the page starts. */
export function checkOffset(request: { offset: number; cursor_id?: string | undefined }): void {
  if (request.cursor_id !== undefined || request.offset <= MAX_OFFSET) return;
  throw new ValidationError(
    `offset: at most ${MAX_OFFSET} without a cursor_id (an offset is walked from the start); page further with cursor_id, the cursor of the previous page, which costs the same at any depth`,
    [{ field: 'offset', error: `over ${MAX_OFFSET} without a cursor_id` }],
  );
}
