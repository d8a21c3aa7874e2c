import { createHmac, timingSafeEqual } from 'node:crypto';
import { ID_PATTERN } from '../ids.js';

/**
 * The signed tokens of email links (DESIGN.md, Transactional email): a click names the
 * message and the link's position, an open or an unsubscribe the message. The token carries
 * no destination (it is stored with the message), and the signature covers the purpose, so
 * an open token is no click token and no token of one message works for another.
 */
export type LinkPurpose = 'click' | 'open' | 'unsubscribe';

export interface LinkToken {
  instanceId: string;
  messageId: string;
  /** The link's position in the email (clicks); 0 otherwise. */
  index: number;
}

const SIGNATURE_BYTES = 16;
const PAYLOAD = /^([a-z0-9][a-z0-9-]{0,62})\.([0-9a-f]{24})\.(\d{1,4})$/;

export class LinkSigner {
  private readonly key: Buffer;

  constructor(secret: string) {
    // A key of its own, so that these signatures can never be confused with cursors'.
    this.key = createHmac('sha256', secret).update('cdp email links v1').digest();
  }

  sign(purpose: LinkPurpose, token: LinkToken): string {
    const payload = `${token.instanceId}.${token.messageId}.${token.index}`;
    return `${Buffer.from(payload).toString('base64url')}.${this.signature(purpose, payload).toString('base64url')}`;
  }

  /** The token's contents, or undefined for anything not signed by this deployment for `purpose`. */
  verify(purpose: LinkPurpose, value: unknown): LinkToken | undefined {
    if (typeof value !== 'string' || value.length > 200) return undefined;
    const [encoded, signature, extra] = value.split('.');
    if (!encoded || !signature || extra !== undefined) return undefined;
    const decoded = Buffer.from(encoded, 'base64url');
    if (decoded.toString('base64url') !== encoded) return undefined;
    const payload = decoded.toString('utf8');
    const given = Buffer.from(signature, 'base64url');
    // Only the canonical spelling: base64 decoding ignores a last character's spare bits,
    // so another spelling of the same bytes would pass as a second, "different" token.
    if (given.toString('base64url') !== signature) return undefined;
    const expected = this.signature(purpose, payload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const match = PAYLOAD.exec(payload);
    if (!match?.[1] || !match[2] || !ID_PATTERN.test(match[2])) return undefined;
    return { instanceId: match[1], messageId: match[2], index: Number(match[3]) };
  }

  private signature(purpose: LinkPurpose, payload: string): Buffer {
    return createHmac('sha256', this.key)
      .update(`${purpose}:${payload}`)
      .digest()
      .subarray(0, SIGNATURE_BYTES);
  }
}

/** The public paths of email links (routes table). */
export const LINK_PATHS = { click: '/t/c', open: '/t/o', unsubscribe: '/t/u' } as const;

/** The links of one message, on the region's public address. */
export function messageLinks(
  baseUrl: string,
  signer: LinkSigner,
  instanceId: string,
  messageId: string,
) {
  const base = baseUrl.replace(/\/+$/, '');
  const url = (purpose: LinkPurpose, index: number) =>
    `${base}${LINK_PATHS[purpose]}?t=${signer.sign(purpose, { instanceId, messageId, index })}`;
  return {
    click: (index: number) => url('click', index),
    open: () => url('open', 0),
    unsubscribe: () => url('unsubscribe', 0),
  };
}
export type MessageLinks = ReturnType<typeof messageLinks>;
