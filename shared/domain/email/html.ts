import { compile } from 'html-to-text';
import { Parser } from 'htmlparser2';
import { EMAIL_LIMITS } from './send-request.js';

/**
 * What sending does to an email's HTML: its links found by a real HTML parser (htmlparser2,
 * one linear pass, fed in slices so that a large body does not hold the event loop), then
 * rewritten through the click redirect (their destinations returned, to be stored with the
 * message), the open pixel, and the text part (derived by the email worker, off the request).
 */

/** A link's `href` value in the HTML, and where it points. */
interface LinkSpan {
  /** The value's span in the HTML, quotes excluded. */
  start: number;
  end: number;
  quoted: boolean;
  /** Entities decoded, surrounding white space trimmed. */
  destination: string;
}

/** What one pass over an email's HTML finds. */
export interface HtmlScan {
  links: LinkSpan[];
  /** How deep the document nests, as an HTML parser builds it. */
  depth: number;
  /** A bound on the text part's length: the text, each link's destination, line breaks. */
  textLength: number;
}

/** HTML read per slice of the pass before other work may run. */
const SLICE_CHARACTERS = 64 * 1024;

const ENTITIES: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };

function decodeEntities(value: string): string {
  return value.replace(/&(#x[0-9a-f]{1,8}|#\d{1,10}|[a-z]{1,10});/gi, (whole, entity: string) => {
    if (!entity.startsWith('#')) return ENTITIES[entity.toLowerCase()] ?? whole;
    const hex = entity[1] === 'x' || entity[1] === 'X';
    const code = parseInt(entity.slice(hex ? 2 : 1), hex ? 16 : 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
}

/** The parser, telling where each attribute value is (its handler is told the values only). */
class SpanParser extends Parser {
  span: { start: number; end: number } | undefined;

  override onattribname(start: number, endIndex: number): void {
    this.span = undefined;
    super.onattribname(start, endIndex);
  }

  override onattribdata(start: number, endIndex: number): void {
    this.span = { start, end: endIndex };
    super.onattribdata(start, endIndex);
  }
}

export const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** One pass over the HTML: its `<a href>` links, how deep it nests, how much text it holds. */
export async function scanHtml(html: string): Promise<HtmlScan> {
  const scan: HtmlScan = { links: [], depth: 0, textLength: 0 };
  let depth = 0;
  let tag = '';
  // Entities stay encoded: spans are of the HTML as written (links decode their own).
  const parser: SpanParser = new SpanParser(
    {
      onopentagname: (name) => {
        tag = name;
      },
      onattribute: (name, value, quote) => {
        if (tag !== 'a' || name !== 'href' || !parser.span) return;
        scan.links.push({
          ...parser.span,
          quoted: quote === '"' || quote === "'",
          destination: decodeEntities(value).trim(),
        });
        scan.textLength += value.length + 3;
      },
      onopentag: () => {
        depth += 1;
        scan.depth = Math.max(scan.depth, depth);
      },
      onclosetag: () => {
        depth -= 1;
        scan.textLength += 2;
      },
      ontext: (text) => {
        scan.textLength += text.length;
      },
    },
    { decodeEntities: false, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  for (let at = 0; at < html.length; at += SLICE_CHARACTERS) {
    parser.write(html.slice(at, at + SLICE_CHARACTERS));
    if (at + SLICE_CHARACTERS < html.length) await yieldToEventLoop();
  }
  parser.end();
  return scan;
}

/** A tracked link the email cannot be sent with; the message says which and why. */
export class BadLinkError extends Error {}

/** C0 controls and DEL: no browser follows them, and no redirect can carry them. */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i += 1) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
/** What a `Location` header can hold as it is (Node refuses anything above U+00FF). */
const HEADER_SAFE = /^[\u0020-\u007e]*$/;

/**
 * Rewrites the email's http(s) links (up to the limit, in order) with `trackedUrl(index)`,
 * leaving `keep` (the unsubscribe link) as written. Returns the destinations by index. A
 * destination with control characters (`&#13;&#10;`, say) is refused (`BadLinkError`); one
 * with other characters a redirect cannot carry is kept percent-encoded, or left untracked if
 * it is no URL at all.
 */
export function rewriteLinks(
  html: string,
  scan: HtmlScan,
  trackedUrl: (index: number) => string,
  keep: (url: string) => boolean,
): { html: string; links: string[] } {
  const links: string[] = [];
  const parts: string[] = [];
  let copied = 0;
  let bytes = 0;
  scan.links.forEach((link, position) => {
    const written = link.destination;
    if (!/^https?:\/\//i.test(written) || keep(written)) return;
    if (hasControl(written)) {
      throw new BadLinkError(
        `the link ${position + 1} of html_body (${JSON.stringify(written.slice(0, 80))}) holds control characters (a line break, say), which no mail client follows: remove them`,
      );
    }
    const destination = HEADER_SAFE.test(written) ? written : canonical(written);
    if (destination === undefined) return;
    // The destinations are kept on the email's record: their number and size are bounded.
    if (links.length >= EMAIL_LIMITS.trackedLinks) return;
    if (bytes + destination.length > EMAIL_LIMITS.trackedLinkBytes) return;
    bytes += destination.length;
    links.push(destination);
    const value = escapeAttribute(trackedUrl(links.length - 1));
    parts.push(html.slice(copied, link.start), link.quoted ? value : `"${value}"`);
    copied = link.end;
  });
  parts.push(html.slice(copied));
  return { html: parts.join(''), links };
}

/** The URL percent-encoded (its host in punycode), or undefined if it is none. */
function canonical(url: string): string | undefined {
  try {
    return new URL(url).href;
  } catch {
    return undefined;
  }
}

/** Adds the open-tracking pixel at the end of the body. */
export function addOpenPixel(html: string, pixelUrl: string): string {
  const pixel = `<img src="${escapeAttribute(pixelUrl)}" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px" />`;
  const close = html.toLowerCase().lastIndexOf('</body>');
  return close === -1 ? `${html}${pixel}` : `${html.slice(0, close)}${pixel}${html.slice(close)}`;
}

/**
 * html-to-text's converter, its selectors compiled once per container (not once per email),
 * when the first text part is made (the API, which makes none, never compiles it).
 */
let toText: ((html: string) => string) | undefined;

/** The plain-text alternative of an HTML body: links kept as `text [url]`, images dropped. */
export function textOf(html: string): string {
  toText ??= compile({
    wordwrap: 100,
    selectors: [
      { selector: 'img', format: 'skip' },
      { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    ],
  });
  return toText(html);
}
