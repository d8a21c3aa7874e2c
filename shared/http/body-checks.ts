import { ValidationError } from '../domain/errors.js';
import { formatPath } from '../domain/validation.js';

/**
 * Checks of a JSON body that JSON.parse and the schemas cannot make, each answered with a 400
 * that says what was wrong (not "Malformed JSON" for JSON that is well formed):
 *
 * - nesting deeper than `MAX_JSON_DEPTH`, found on the raw text before it is parsed: parsing
 *   (with middy's reviver) and every recursive walk of the value would otherwise overflow the
 *   stack on a few kilobytes of brackets. No request of the API nests half as deep.
 * - strings and member names holding a lone UTF-16 surrogate (`"\ud800"`): they are not
 *   Unicode text, could not be stored as sent (DynamoDB stores UTF-8) and would no longer
 *   equal themselves once read back (a merge key, an email address).
 */
export const MAX_JSON_DEPTH = 64;

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const wellFormed = (text: string) => !LONE_SURROGATE.test(text);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = new Set([0x7b, 0x5b]);
const CLOSE = new Set([0x7d, 0x5d]);

/** Throws when `text` opens more than `max` objects or arrays inside one another. */
export function checkJsonDepth(text: string, max = MAX_JSON_DEPTH): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i += 1;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (OPEN.has(c)) {
      depth += 1;
      if (depth > max) {
        throw new ValidationError(`Request body nests deeper than ${max} levels`, [
          { field: 'body', error: `nests deeper than ${max} levels of objects and arrays` },
        ]);
      }
    } else if (CLOSE.has(c)) {
      depth -= 1;
    }
  }
}

/** Throws naming the first member whose name or string value is not well-formed Unicode. */
export function checkWellFormedText(body: unknown): void {
  const path = findIllFormed(body, []);
  if (path === undefined) return;
  const member = formatPath(path) || 'body';
  throw new ValidationError(
    `${member}: contains a lone UTF-16 surrogate (such as \\ud800), which is not Unicode text`,
    [{ field: member, error: 'contains a lone UTF-16 surrogate' }],
  );
}

/** Depth is bounded by `checkJsonDepth`, so the recursion is too. */
function findIllFormed(value: unknown, path: (string | number)[]): (string | number)[] | undefined {
  if (typeof value === 'string') return wellFormed(value) ? undefined : path;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      const found = findIllFormed(value[index], [...path, index]);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, member] of Object.entries(value)) {
      // The member name is shown escaped: printing the surrogate itself would not survive.
      if (!wellFormed(key)) return [...path, JSON.stringify(key).slice(1, -1)];
      const found = findIllFormed(member, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}

/** A member name that would set or reach an object's prototype (as middy's parser refuses). */
const isPrototypeMember = (key: string, value: unknown) =>
  key === '__proto__' ||
  (key === 'constructor' &&
    typeof value === 'object' &&
    value !== null &&
    Object.hasOwn(value, 'prototype'));

/**
 * The path of a member that names an object prototype (`organizations[0].fields.__proto__`),
 * for the answer to a body middy's parser refused: its error names only the member. JSON.parse makes such members plain own properties, so
 * reading the body again here changes no prototype. Called on refused bodies only.
 */
export function prototypeMemberPath(text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const path = findPrototypeMember(body, []);
  return path && formatPath(path);
}

/** Depth is bounded by `checkJsonDepth`, so the recursion is too. */
function findPrototypeMember(
  value: unknown,
  path: (string | number)[],
): (string | number)[] | undefined {
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      const found = findPrototypeMember(value[index], [...path, index]);
      if (found) return found;
    }
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, member] of Object.entries(value)) {
      if (isPrototypeMember(key, member)) return [...path, key];
      const found = findPrototypeMember(member, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}
