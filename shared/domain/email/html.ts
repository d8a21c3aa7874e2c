import { convert } from 'html-to-text';
import { EMAIL_LIMITS } from './send-request.js';

/**
 * What sending does to an email's HTML: links rewritten through the click redirect (their
 * destinations returned, to be stored with the message), the open pixel, and the text part.
 */

/** `href` values of anchors; only http(s) links are tracked (not mailto:, tel:, #…). */
const ANCHOR_HREF = /(<a\b[^>]*?\shref\s*=\s*)(?:"([^"]*)"|'([^']*)')/gi;

const ENTITIES: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };

function decodeEntities(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, entity: string) => {
    if (!entity.startsWith('#')) return ENTITIES[entity.toLowerCase()] ?? whole;
    const hex = entity[1] === 'x' || entity[1] === 'X';
    const code = parseInt(entity.slice(hex ? 2 : 1), hex ? 16 : 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
}

/**
 * Rewrites the email's http(s) links (up to the limit, in order) with `trackedUrl(index)`,
 * leaving `keep` (the unsubscribe link) as written. Returns the destinations by index.
 */
export function rewriteLinks(
  html: string,
  trackedUrl: (index: number) => string,
  keep: (url: string) => boolean,
): { html: string; links: string[] } {
  const links: string[] = [];
  let bytes = 0;
  const rewritten = html.replace(
    ANCHOR_HREF,
    (whole, prefix: string, double?: string, single?: string) => {
      const destination = decodeEntities((double ?? single ?? '').trim());
      if (!/^https?:\/\//i.test(destination) || keep(destination)) return whole;
      // The destinations are kept on the email's record: their number and size are bounded.
      if (links.length >= EMAIL_LIMITS.trackedLinks) return whole;
      if (bytes + destination.length > EMAIL_LIMITS.trackedLinkBytes) return whole;
      bytes += destination.length;
      links.push(destination);
      return `${prefix}"${escapeAttribute(trackedUrl(links.length - 1))}"`;
    },
  );
  return { html: rewritten, links };
}

/** Adds the open-tracking pixel at the end of the body. */
export function addOpenPixel(html: string, pixelUrl: string): string {
  const pixel = `<img src="${escapeAttribute(pixelUrl)}" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px" />`;
  const close = html.toLowerCase().lastIndexOf('</body>');
  return close === -1 ? `${html}${pixel}` : `${html.slice(0, close)}${pixel}${html.slice(close)}`;
}

/** The plain-text alternative of an HTML body: links kept as `text [url]`, images dropped. */
export function textOf(html: string): string {
  return convert(html, {
    wordwrap: 100,
    selectors: [
      { selector: 'img', format: 'skip' },
      { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    ],
  });
}
