import { createHmac, timingSafeEqual } from 'node:crypto';
import { ID_PATTERN } from '../ids.js';
import { LEGACY_KID, type Keyring } from '../signing-keys.js';

/**
 * The signed tokens of email links (DESIGN.md, Transactional email): a click names the
 * message and the link's position, an open or an unsubscribe the message. The token carries
 * no destination (it is stored with the message), and the signature covers the purpose, so
 * an open token is no click token and no token of one message works for another. Tokens
 * name the key that signed them (signing-keys.ts: keys rotate with an overlap) and expire
 * (`LINK_TOKEN_DAYS` after the email was built). Tokens made before key IDs and expiry
 * (their payload has neither) are the legacy key's and do not expire: they work while that
 * key is not retired.
 */
export type LinkPurpose = 'click' | 'open' | 'unsubscribe';

export interface LinkToken {
  instanceId: string;
  messageId: string;
  /** The link's position in the email (clicks); 0 otherwise. */
  index: number;
}

/** How long an email's links work: a year, within the 400 days its record is kept. */
export const LINK_TOKEN_DAYS = 365;
const DAY_SECONDS = 86_400;

const SIGNATURE_BYTES = 16;
const LEGACY_PAYLOAD = /^([a-z0-9][a-z0-9-]{0,62})\.([0-9a-f]{24})\.(\d{1,4})$/;
const PAYLOAD =
  /^2\.(k[0-9a-z]{1,12})\.([a-z0-9][a-z0-9-]{0,62})\.([0-9a-f]{24})\.(\d{1,4})\.([0-9a-z]{1,8})$/;

export type VerifiedToken = LinkToken & { expired: boolean };

export class LinkSigner {
  private readonly keys = new Map<string, Buffer>();

  constructor(
    private readonly keyring: Keyring,
    private readonly now: () => number = Date.now,
  ) {}

  sign(purpose: LinkPurpose, token: LinkToken): string {
    const { kid } = this.keyring.current;
    const expires = Math.floor(this.now() / 1000) + LINK_TOKEN_DAYS * DAY_SECONDS;
    const payload = `2.${kid}.${token.instanceId}.${token.messageId}.${token.index}.${expires.toString(36)}`;
    return `${Buffer.from(payload).toString('base64url')}.${this.signature(kid, purpose, payload)?.toString('base64url') ?? ''}`;
  }

  /**
   * The token's contents, or undefined for anything not signed by a key of this deployment's
   * keyring for `purpose` (`expired` says whether its time has passed).
   */
  verify(purpose: LinkPurpose, value: unknown): VerifiedToken | undefined {
    if (typeof value !== 'string' || value.length > 300) return undefined;
    const [encoded, signature, extra] = value.split('.');
    if (!encoded || !signature || extra !== undefined) return undefined;
    const decoded = Buffer.from(encoded, 'base64url');
    if (decoded.toString('base64url') !== encoded) return undefined;
    const payload = decoded.toString('utf8');
    const given = Buffer.from(signature, 'base64url');
    // Only the canonical spelling: base64 decoding ignores a last character's spare bits,
    // so another spelling of the same bytes would pass as a second, "different" token.
    if (given.toString('base64url') !== signature) return undefined;
    const current = PAYLOAD.exec(payload);
    const legacy = current ? undefined : LEGACY_PAYLOAD.exec(payload);
    const kid = current ? current[1] : LEGACY_KID;
    const expected = kid === undefined ? undefined : this.signature(kid, purpose, payload);
    if (!expected || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return undefined;
    }
    const [instanceId, messageId, index, expires] = current
      ? [current[2], current[3], current[4], current[5]]
      : [legacy?.[1], legacy?.[2], legacy?.[3], undefined];
    if (!instanceId || !messageId || !ID_PATTERN.test(messageId)) return undefined;
    return {
      instanceId,
      messageId,
      index: Number(index),
      expired: expires !== undefined && parseInt(expires, 36) * 1000 <= this.now(),
    };
  }

  /** A key of its own per signing key, so that these signatures are never cursors'. */
  private signature(kid: string, purpose: LinkPurpose, payload: string): Buffer | undefined {
    let key = this.keys.get(kid);
    if (!key) {
      const secret = this.keyring.find(kid)?.secret;
      if (secret === undefined) return undefined;
      key = createHmac('sha256', secret).update('cdp email links v1').digest();
      this.keys.set(kid, key);
    }
    return createHmac('sha256', key)
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
