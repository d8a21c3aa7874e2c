import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from './errors.js';
import { LEGACY_KID, type Keyring } from './signing-keys.js';

/**
 * Paging cursors: opaque to clients and tamper-evident. A cursor is the ID of the key that
 * signed it, base64url JSON, and an HMAC-SHA256 tag over the instance ID and that JSON, made
 * with that key of the deployment's keyring (signing-keys.ts); so a cursor cannot be forged
 * or altered, one instance's cursor is refused by another, and cursors survive a key
 * rotation for as long as their key is not retired. Cursors made before key IDs (two parts,
 * no ID) are the legacy key's. Anything that does not verify and decode is a 400 naming
 * `cursor_id`.
 */
export interface CursorCodec {
  encode(value: unknown): string;
  decode<S extends z.ZodType>(schema: S, cursor: string): z.infer<S>;
}

const TAG_BYTES = 16;

function refused(): ValidationError {
  return new ValidationError(
    'cursor_id: not a cursor this API issued for this listing (send the cursor_id of the previous page, unchanged)',
    [{ field: 'cursor_id', error: 'not a valid cursor' }],
  );
}

/** A codec whose cursors are valid only for `scope` (the instance ID) under `keyring`. */
export function cursorCodec(keyring: Keyring, scope: string): CursorCodec {
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
