import type { z } from 'zod';
import { ValidationError } from './errors.js';

/** `instances[0].person_fields[3].id` from a path array. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((part, index) =>
      typeof part === 'number' ? `[${part}]` : `${index === 0 ? '' : '.'}${String(part)}`,
    )
    .join('');
}

/**
 * Parses input with a schema; on failure, a `ValidationError` whose message names each bad
 * member by its path (`people[3].fields: expected an object`) and whose details list them.
 */
export function parseWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  what: string,
): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => ({
    field: formatPath(issue.path) || what,
    error: issue.message,
  }));
  const summary = details.map((d) => `${d.field}: ${d.error}`).join('; ');
  throw new ValidationError(`Invalid ${what}: ${summary}`, details);
}
