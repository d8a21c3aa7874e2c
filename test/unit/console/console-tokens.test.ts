import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { bearerTokenOf, consoleTokenVerifier } from '../../../shared/adapters/console-tokens.js';
import { mayManage } from '../../../shared/domain/console/console-user.js';
import { SignInRequiredError } from '../../../shared/domain/errors.js';

/**
 * The console's token check (issuer, audience, expiry, signature by a published key, RS256
 * only, an ID token's claims), against an issuer whose keys a local server publishes.
 */
let server: Server;
let issuer = '';
let signingKey: CryptoKey;
const kid = 'k1';

beforeAll(async () => {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  signingKey = privateKey;
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256' }] });
  server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(jwks);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(
  () =>
    new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    ),
);

function token(
  claims: JWTPayload = {},
  options: { audience?: string; issuer?: string; expires?: string | number; key?: CryptoKey } = {},
) {
  return new SignJWT({ email: 'ops@acme.test', 'cognito:groups': ['instance:acme'], ...claims })
    .setProtectedHeader({ alg: 'RS256', kid })
    .setIssuer(options.issuer ?? issuer)
    .setAudience(options.audience ?? 'cdp-console')
    .setSubject('user-1')
    .setIssuedAt()
    .setExpirationTime(options.expires ?? '1h')
    .sign(options.key ?? signingKey);
}

const verifier = () => consoleTokenVerifier({ issuer, clientId: 'cdp-console' });

describe('the console token verifier', () => {
  it('reads the user and the instances their groups name from a valid ID token', async () => {
    const user = await verifier()(
      await token({ 'cognito:groups': ['instance:acme', 'instance:globex', 'readers'] }),
    );
    expect(user).toMatchObject({ subject: 'user-1', email: 'ops@acme.test', platformAdmin: false });
    expect([...user.instances].sort()).toEqual(['acme', 'globex']);
    expect(mayManage(user, 'acme')).toBe(true);
    expect(mayManage(user, 'koala')).toBe(false);
    const admin = await verifier()(await token({ 'cognito:groups': ['platform-admin'] }));
    expect(mayManage(admin, 'koala')).toBe(true);
  });

  it.each([
    ['another audience', () => token({}, { audience: 'another-client' })],
    ['another issuer', () => token({}, { issuer: 'https://issuer.example' })],
    ['an expired token', () => token({}, { expires: Math.floor(Date.now() / 1000) - 60 })],
    ['an access token', () => token({ token_use: 'access' })],
    ['groups that are not a list', () => token({ 'cognito:groups': 'platform-admin' })],
    [
      'a token of another key',
      async () => token({}, { key: (await generateKeyPair('RS256')).privateKey }),
    ],
    ['no token', () => Promise.resolve('')],
    ['not a token', () => Promise.resolve('a.b.c')],
  ])('refuses %s with 401', async (_name, make) => {
    await expect(verifier()(await make())).rejects.toBeInstanceOf(SignInRequiredError);
  });

  it('refuses an unsigned token and a token signed with a shared secret', async () => {
    const [header, payload] = (await token()).split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
    const hs256 = await new SignJWT({ 'cognito:groups': ['platform-admin'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(issuer)
      .setAudience('cdp-console')
      .setSubject('user-1')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('a shared secret of thirty-two bytes!'));
    expect(header).toBeDefined();
    await expect(verifier()(none)).rejects.toBeInstanceOf(SignInRequiredError);
    await expect(verifier()(hs256)).rejects.toBeInstanceOf(SignInRequiredError);
  });

  it('reads the bearer token of an Authorization header', () => {
    expect(bearerTokenOf('Bearer abc.def.ghi')).toBe('abc.def.ghi');
    expect(bearerTokenOf('bearer  abc')).toBe('abc');
    expect(bearerTokenOf('Basic abc')).toBeUndefined();
    expect(bearerTokenOf(undefined)).toBeUndefined();
  });
});
