import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** The message of an `httpGet` whose answer did not come within its time. */
const TIMED_OUT = 'timed out';

export interface HttpAnswer {
  status: number;
  body: string;
}

/**
 * A GET with Node's own HTTP client, for endpoints the user names (LocalStack's port). Not
 * `fetch`: it refuses the ports browsers block (6566, 6000, 5060, …) with "bad port", and
 * LocalStack may well be on one of them.
 */
export function httpGet(url: string, timeoutMs: number): Promise<HttpAnswer> {
  const request = new URL(url).protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: 'GET', timeout: timeoutMs }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
      });
      response.on('error', reject);
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(TIMED_OUT)));
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/**
 * The first answer of an endpoint: an error at once when nothing listens (a refused
 * connection), but a listener slow to answer is asked again until `waitMs` have passed
 * (LocalStack, just ready on a busy machine, took more than 3 s over its first request).
 */
export async function firstAnswer(
  url: string,
  { attemptMs = 3_000, waitMs = 30_000 }: { attemptMs?: number; waitMs?: number } = {},
): Promise<HttpAnswer> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await httpGet(url, attemptMs);
    } catch (error) {
      if ((error as Error).message !== TIMED_OUT || Date.now() >= deadline) throw error;
    }
  }
}
