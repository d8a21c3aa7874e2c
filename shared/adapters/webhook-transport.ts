import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import {
  refusedAddress,
  type AddressPolicy,
  type HostResolver,
} from '../domain/webhooks/address-policy.js';
import { RESPONSE_BODY_BYTES, responseExcerpt } from '../domain/webhooks/attempts.js';
import {
  DELIVERY_TIMEOUT_MS,
  type DeliveryAnswer,
  type WebhookTransport,
} from '../domain/webhooks/delivery.js';

/** Every address a name resolves to (A and AAAA, as the system resolver gives them). */
export const resolveHost: HostResolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * The lookup the connection itself uses: it refuses the whole name when any of its addresses
 * is refused, so the address connected to is one just checked (no rebinding between the
 * check and the connection).
 */
function checkedLookup(policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses: LookupAddress[]) => {
      if (error) {
        callback(error, '', 4);
        return;
      }
      const refusal = addresses
        .map((entry) => refusedAddress(entry.address, policy))
        .find((why) => why !== undefined);
      const first = addresses[0];
      if (refusal !== undefined || !first) {
        callback(new Error(refusal ?? `${hostname} has no address`), '', 4);
        return;
      }
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

/**
 * Deliveries over `node:http(s)`: no redirect is followed (the status is the answer), the
 * connection goes only to checked addresses, the whole exchange has `timeoutMs`, and the
 * answer's first KB is kept.
 */
export function httpWebhookTransport(
  policy: AddressPolicy,
  timeoutMs = DELIVERY_TIMEOUT_MS,
): WebhookTransport {
  return ({ url, headers, body, timeoutMs: left }) =>
    new Promise<DeliveryAnswer>((resolve, reject) => {
      const target = new URL(url);
      const host = target.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) !== 0) {
        const why = refusedAddress(host, policy);
        if (why !== undefined) {
          reject(new Error(why));
          return;
        }
      }
      const started = performance.now();
      const options: RequestOptions = {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: checkedLookup(policy),
        agent: false,
      };
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      let settled = false;
      const request = send(target, options, (response) => {
        const status = response.statusCode ?? 0;
        // The first KB of the body is kept for the attempt log; past it, the answer is not
        // read further (a receiver's large or endless body costs nothing more).
        const chunks: Buffer[] = [];
        let bytes = 0;
        const answered = (truncated: boolean) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({
            status,
            latencyMs: Math.round(performance.now() - started),
            body: responseExcerpt(Buffer.concat(chunks)),
            truncated,
          });
        };
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          bytes += chunk.length;
          if (bytes > RESPONSE_BODY_BYTES) {
            answered(true);
            response.destroy();
          }
        });
        response.once('end', () => {
          answered(false);
        });
        response.once('error', fail);
      });
      const limit = Math.min(left ?? timeoutMs, timeoutMs);
      const timer = setTimeout(() => {
        request.destroy(new Error(`no answer within ${limit} ms`));
      }, limit);
      function fail(error: Error) {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(error);
      }
      request.once('error', fail);
      request.end(body);
    });
}
