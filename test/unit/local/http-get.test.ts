import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { firstAnswer } from '../../../local/http-get.js';

/**
 * The first answer of an external endpoint (`CDP_AWS_ENDPOINT=external`): a refused connection
 * fails at once, a listener slow to answer is asked again until it answers or the wait ends.
 */
const servers: Server[] = [];
const held: ServerResponse[] = [];
afterEach(async () => {
  for (const response of held.splice(0)) response.destroy();
  await Promise.all(
    servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))),
  );
});

/** A server that leaves its first `silent` requests unanswered; returns its URL and count. */
async function serverSilentFor(silent: number) {
  let requests = 0;
  const server = createServer((_request, response) => {
    requests += 1;
    if (requests <= silent) {
      held.push(response);
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end('ready');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, requests: () => requests };
}

describe('firstAnswer', () => {
  it('asks a listener that does not answer in time again, and returns its answer', async () => {
    const server = await serverSilentFor(2);
    const answer = await firstAnswer(server.url, { attemptMs: 200, waitMs: 5_000 });
    expect(answer).toEqual({ status: 200, body: 'ready' });
    expect(server.requests()).toBe(3);
  });

  it('fails with the timeout once the wait has passed without an answer', async () => {
    const server = await serverSilentFor(Number.POSITIVE_INFINITY);
    await expect(firstAnswer(server.url, { attemptMs: 200, waitMs: 500 })).rejects.toThrow(
      'timed out',
    );
    expect(server.requests()).toBeGreaterThanOrEqual(2);
  });

  it('fails at once when nothing listens, without waiting', async () => {
    const server = await serverSilentFor(0);
    const { url } = server;
    const closing = servers.pop();
    await new Promise((resolve) => closing?.close(resolve));
    await expect(firstAnswer(url, { attemptMs: 200, waitMs: 60_000 })).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
  });
});
