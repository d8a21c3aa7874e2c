import { BlockList, isIP } from 'node:net';
import { ValidationError } from '../errors.js';

/**
 * Where webhooks may deliver (docs/webhooks.md, "Addresses"). A deployment delivers only to
 * `https` URLs whose host resolves to public addresses: never to loopback, private,
 * link-local, multicast, shared, reserved or cloud-metadata addresses, which would let a
 * customer's URL reach into the deployment's own network. The check runs when a webhook is
 * saved and again at every delivery, on the addresses the connection then uses (a name that
 * resolved to a public address once may resolve to a private one later: DNS rebinding).
 *
 * The local stack alone sets `allowLoopback` (`CDP_WEBHOOKS_ALLOW_LOOPBACK`): then
 * `http://127.0.0.1:<port>` (that literal address, no name) is allowed, so that the feature
 * can be tried and tested on one machine.
 */
export interface AddressPolicy {
  /** `http://127.0.0.1` allowed (the local stack only). */
  allowLoopback: boolean;
}

/** Resolves a host name to every address it has (the DNS port; `node:dns` in the adapter). */
export type HostResolver = (host: string) => Promise<string[]>;

const LOOPBACK = '127.0.0.1';

const refused = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared (carrier-grade NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, with the metadata service 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  refused.addSubnet(network, prefix, 'ipv4');
}
/**
 * IPv6: only global unicast (2000::/3) is delivered to, less the parts of it that are not a
 * host of the public internet or that carry an IPv4 address inside (which a relay or
 * translator would then reach: 6to4 and Teredo). Everything outside 2000::/3 is refused too:
 * loopback, unspecified, IPv4-compatible (::/96), IPv4-mapped (::ffff:0:0/96) and
 * IPv4-translated (::ffff:0:0:0/96) forms, NAT64 (64:ff9b::/96, 64:ff9b:1::/48), discard,
 * unique local (with the metadata service fd00:ec2::254), link-local, site-local and
 * multicast.
 */
const globalUnicast = new BlockList();
globalUnicast.addSubnet('2000::', 3, 'ipv6');

const refusedGlobal = (
  [
    ['2001::', 32, 'Teredo (it embeds an IPv4 address)'],
    ['2001::', 23, 'an IETF protocol assignment'],
    ['2001:db8::', 32, 'a documentation address'],
    ['2002::', 16, '6to4 (it embeds an IPv4 address)'],
    ['3fff::', 20, 'a documentation address'],
  ] as const
).map(([network, prefix, what]) => {
  const block = new BlockList();
  block.addSubnet(network, prefix, 'ipv6');
  return { block, what };
});

function refusedIpv6(address: string): string | undefined {
  if (!globalUnicast.check(address, 'ipv6')) {
    const v4 = embeddedIpv4(address);
    return v4 === undefined
      ? `${address} is not a global unicast address (loopback, private, link-local, multicast, reserved or metadata)`
      : `${address} embeds the IPv4 address ${v4}: IPv4-mapped, -compatible, -translated and NAT64 forms are refused`;
  }
  const refusal = refusedGlobal.find(({ block }) => block.check(address, 'ipv6'));
  return refusal && `${address} is ${refusal.what}`;
}

/** `::ffff:10.0.0.1`, `::ffff:a00:1`, `::a00:1`: the IPv4 address the last 32 bits stand for. */
function embeddedIpv4(address: string): string | undefined {
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (dotted) return dotted[1];
  const hextets = /:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hextets || !/^(::|::ffff:|::ffff:0:|64:ff9b:)/i.test(address)) return undefined;
  const high = parseInt(hextets[1] ?? '0', 16);
  const low = parseInt(hextets[2] ?? '0', 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Why an address may not be delivered to, or `undefined` when it may. */
export function refusedAddress(address: string, policy: AddressPolicy): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 0) return `${address} is not an IP address`;
  if (family === 6) return refusedIpv6(bare);
  if (policy.allowLoopback && bare === LOOPBACK) return undefined;
  if (refused.check(bare, 'ipv4')) {
    return `${bare} is a loopback, private, link-local, multicast, reserved or metadata address`;
  }
  return undefined;
}

const urlError = (message: string) =>
  new ValidationError(`url: ${message}`, [{ field: 'url', error: message }]);

/**
 * A webhook URL checked before it is saved: its form (https, or `http://127.0.0.1` where the
 * policy allows it; no credentials; at most 2,048 characters), and every address its host
 * resolves to. Throws `ValidationError` naming `url`.
 */
export async function checkWebhookUrl(
  raw: string,
  policy: AddressPolicy,
  resolve: HostResolver,
): Promise<URL> {
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (!url) throw urlError('expected an absolute URL');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopbackHttp = policy.allowLoopback && host === LOOPBACK;
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopbackHttp)) {
    throw urlError(
      policy.allowLoopback
        ? 'expected an https URL (or http://127.0.0.1 on the local stack)'
        : 'expected an https URL',
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw urlError('credentials in the URL are not allowed (sign with the webhook secret)');
  }
  const addresses = isIP(host) !== 0 ? [host] : await resolveOrRefuse(host, resolve);
  for (const address of addresses) {
    const why = refusedAddress(address, policy);
    if (why !== undefined) throw urlError(`${url.hostname} is refused: ${why}`);
  }
  return url;
}

async function resolveOrRefuse(host: string, resolve: HostResolver): Promise<string[]> {
  const addresses = await resolve(host).catch(() => []);
  if (addresses.length === 0) throw urlError(`${host} does not resolve to any address`);
  return addresses;
}
