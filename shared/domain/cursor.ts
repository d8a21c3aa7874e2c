import { z } from 'zod';
import { ValidationError } from './errors.js';

/**
 * Opaque paging cursors: base64url JSON that only this service reads back. A cursor that
 * does not decode to the expected shape is a 400 naming `cursor_id`.
 */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodeCursor<S extends z.ZodType>(schema: S, cursor: string): z.infer<S> {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const parsed = schema.safeParse(decoded);
    if (parsed.success) return parsed.data;
  } catch {
    // reported below
  }
  throw new ValidationError(
    'cursor_id: not a cursor this API issued (send the cursor_id of the previous page)',
    [{ field: 'cursor_id', error: 'malformed' }],
  );
}
