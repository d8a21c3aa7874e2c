import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  CURSOR_KEEP_HOURS,
  cursorCodec,
  issuedCursors,
  memoryCursorStore,
} from '../../../shared/domain/cursor.js';
import { singleKeyring } from '../../../shared/domain/signing-keys.js';

const schema = z.object({ after: z.string() });
const keyring = singleKeyring('secret');

describe('issued cursors', () => {
  it('are 24 hexadecimal characters naming the state, for the instance and listing only', async () => {
    const store = memoryCursorStore();
    const people = issuedCursors(keyring, 'acme', 'person/get', store);
    const id = await people.encode({ after: 'x' });
    expect(id).toMatch(/^[0-9a-f]{24}$/);
    await expect(people.decode(schema, id)).resolves.toEqual({ after: 'x' });
    // Upper case is the same ID.
    await expect(people.decode(schema, id.toUpperCase())).resolves.toEqual({ after: 'x' });
    // Another listing of the instance, or the same listing of another instance: refused.
    const organizations = issuedCursors(keyring, 'acme', 'organizations/get', store);
    await expect(organizations.decode(schema, id)).rejects.toThrow(/^cursor_id: not a cursor/);
    const theirs = issuedCursors(keyring, 'other', 'person/get', store);
    await expect(theirs.decode(schema, id)).rejects.toThrow(/^cursor_id: not a cursor/);
    // An ID nobody issued, of the right length.
    await expect(people.decode(schema, 'f'.repeat(24))).rejects.toThrow(/^cursor_id: not a cursor/);
    await expect(people.decode(schema, 'g'.repeat(24))).rejects.toThrow(/^cursor_id: not a cursor/);
  });

  it('answer an ID of another length as the real API does', async () => {
    const people = issuedCursors(keyring, 'acme', 'person/get', memoryCursorStore());
    for (const id of ['0069061b5bda4060a576', 'a-uuid-4bd0f823-9646-4a39-b942-988a', '']) {
      await expect(people.decode(schema, id)).rejects.toMatchObject({
        message: 'cursor_id: the length must be 12 or 24',
        details: [{ field: 'cursor_id', error: 'the length must be 12 or 24' }],
      });
    }
  });

  it(`expire ${CURSOR_KEEP_HOURS} hours after they were answered`, async () => {
    let now = Date.parse('2026-12-07T10:00:00Z');
    const people = issuedCursors(keyring, 'acme', 'person/get', memoryCursorStore(), () => now);
    const id = await people.encode({ after: 'x' });
    now += CURSOR_KEEP_HOURS * 3_600_000 - 1_000;
    await expect(people.decode(schema, id)).resolves.toEqual({ after: 'x' });
    now += 1_000;
    await expect(people.decode(schema, id)).rejects.toThrow(/^cursor_id: expired/);
  });

  it('keep accepting the signed cursors given out before IDs', async () => {
    const people = issuedCursors(keyring, 'acme', 'person/get', memoryCursorStore());
    const signed = cursorCodec(keyring, 'acme').encode({ after: 'y' });
    await expect(people.decode(schema, signed)).resolves.toEqual({ after: 'y' });
    expect(people.signed.decode(schema, signed)).toEqual({ after: 'y' });
    const forged = `${signed.slice(0, -2)}AA`;
    await expect(people.decode(schema, forged)).rejects.toThrow(/^cursor_id/);
  });
});
