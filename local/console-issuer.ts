import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, {
  type Adapter,
  type AdapterPayload,
  type Configuration,
  type KoaContextWithOIDC,
} from 'oidc-provider';
import { z } from 'zod';
import { GROUPS_CLAIM, PLATFORM_ADMIN_GROUP } from '../shared/domain/console/console-user.js';

/**
 * The console's identity provider under `npm start`: a standards-conformant OpenID Connect
 * issuer (oidc-provider, the certified library) on 127.0.0.1, standing in for the region's
 * Amazon Cognito user pool. It issues what Cognito issues to the console's app client (an
 * ID token with `email` and the user's groups in `cognito:groups`, RS256, keys published at
 * `/.well-known/jwks.json`), after the authorization code flow with PKCE, so that the
 * functions verify local and AWS tokens with the same code. Its users come from a file:
 * `CDP_CONSOLE_USERS`, or one platform admin minted on the first run and kept in the data
 * directory beside the demo keys.
 */
export const CONSOLE_CLIENT_ID = 'cdp-console';

export const ConsoleUsersFile = z.array(
  z.strictObject({
    email: z.email(),
    password: z.string().min(12),
    groups: z.array(z.string().min(1)).default([]),
  }),
);
export type LocalConsoleUser = z.infer<typeof ConsoleUsersFile>[number];

/** The users of a stack: `CDP_CONSOLE_USERS`, else the demo admin (minted once, kept). */
export function loadConsoleUsers(
  dataDir: string,
  ephemeral: boolean,
  file = process.env.CDP_CONSOLE_USERS,
): LocalConsoleUser[] {
  if (file) return ConsoleUsersFile.parse(JSON.parse(readFileSync(file, 'utf8')));
  const kept = join(dataDir, 'console-users.json');
  if (!ephemeral && existsSync(kept)) {
    return ConsoleUsersFile.parse(JSON.parse(readFileSync(kept, 'utf8')));
  }
  const users = [
    {
      email: 'admin@demo.test',
      password: randomBytes(12).toString('base64url'),
      groups: [PLATFORM_ADMIN_GROUP],
    },
  ];
  if (!ephemeral) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(kept, JSON.stringify(users, null, 2) + '\n', { mode: 0o600 });
  }
  return users;
}

/** A user's `sub`: stable for an email, opaque like Cognito's. */
export function subjectOf(email: string): string {
  return createHash('sha256').update(email.toLowerCase()).digest('hex').slice(0, 32);
}

/** The issuer's signing key and cookie key, kept so that sign-ins survive a restart. */
async function issuerSecrets(dataDir: string, ephemeral: boolean) {
  const file = join(dataDir, 'console-issuer.json');
  if (!ephemeral && existsSync(file)) {
    return JSON.parse(readFileSync(file, 'utf8')) as { jwk: JWK; cookieKey: string };
  }
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig' };
  jwk.kid = createHash('sha256').update(String(jwk.n)).digest('base64url').slice(0, 16);
  const secrets = { jwk, cookieKey: randomBytes(32).toString('base64url') };
  if (!ephemeral) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, JSON.stringify(secrets) + '\n', { mode: 0o600 });
  }
  return secrets;
}

/**
 * Where the issuer keeps sessions, codes and grants: in memory, on purpose (a local stack's
 * sign-ins; a restart signs everyone out). One store for every model, keyed `<model>:<id>`.
 */
const stored = new Map<string, { payload: AdapterPayload; expiresAt: number }>();

class LocalAdapter implements Adapter {
  constructor(private readonly model: string) {}

  private key(id: string) {
    return `${this.model}:${id}`;
  }

  upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    stored.set(this.key(id), { payload, expiresAt: Date.now() + expiresIn * 1000 });
    if (payload.uid)
      stored.set(`${this.model}:uid:${payload.uid}`, {
        payload: { id },
        expiresAt: Date.now() + expiresIn * 1000,
      });
    if (payload.grantId) {
      const grant = `grant:${payload.grantId}`;
      const ids = (stored.get(grant)?.payload.ids as string[] | undefined) ?? [];
      stored.set(grant, {
        payload: { ids: [...ids, this.key(id)] },
        expiresAt: Date.now() + expiresIn * 1000,
      });
    }
    return Promise.resolve();
  }

  find(id: string): Promise<AdapterPayload | undefined> {
    const entry = stored.get(this.key(id));
    if (!entry || entry.expiresAt <= Date.now()) return Promise.resolve(undefined);
    return Promise.resolve(entry.payload);
  }

  findByUid(uid: string): Promise<AdapterPayload | undefined> {
    const id = stored.get(`${this.model}:uid:${uid}`)?.payload.id;
    return typeof id === 'string' ? this.find(id) : Promise.resolve(undefined);
  }

  findByUserCode(): Promise<AdapterPayload | undefined> {
    return Promise.resolve(undefined);
  }

  consume(id: string): Promise<void> {
    const entry = stored.get(this.key(id));
    if (entry) entry.payload = { ...entry.payload, consumed: Math.floor(Date.now() / 1000) };
    return Promise.resolve();
  }

  destroy(id: string): Promise<void> {
    stored.delete(this.key(id));
    return Promise.resolve();
  }

  revokeByGrantId(grantId: string): Promise<void> {
    const grant = `grant:${grantId}`;
    for (const key of (stored.get(grant)?.payload.ids as string[] | undefined) ?? [])
      stored.delete(key);
    stored.delete(grant);
    return Promise.resolve();
  }
}

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The sign-in page: a labelled form, usable with the keyboard and screen readers. */
function loginPage(uid: string, problem?: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in to the console</title>
<style>body{font-family:system-ui,sans-serif;max-width:24rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}
label{display:block;margin-top:1rem;font-weight:600}input{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}
button{margin-top:1.5rem;padding:.6rem 1.2rem;font-size:1rem;background:#1c5fd4;color:#fff;border:0;border-radius:4px}
[role=alert]{color:#a30000;margin-top:1rem}</style></head>
<body><main><h1>Sign in to the console</h1>
${problem ? `<p role="alert">${escape(problem)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form></main></body></html>`;
}

async function formOf(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > 16 * 1024) throw new Error('form too large');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function samePassword(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export interface ConsoleIssuer {
  issuer: string;
  clientId: string;
  close(): Promise<void>;
}

export async function startConsoleIssuer(options: {
  host: string;
  port: number;
  /** Where the console may be sent back to after sign-in (each region's console). */
  consoleUrls: string[];
  users: LocalConsoleUser[];
  dataDir: string;
  ephemeral: boolean;
}): Promise<ConsoleIssuer> {
  const issuer = `http://${options.host}:${options.port}`;
  const { jwk, cookieKey } = await issuerSecrets(options.dataDir, options.ephemeral);
  const users = new Map(options.users.map((user) => [subjectOf(user.email), user]));
  const origins = new Set(options.consoleUrls.map((url) => new URL(url).origin));
  const configuration: Configuration = {
    adapter: LocalAdapter,
    clients: [
      {
        client_id: CONSOLE_CLIENT_ID,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: options.consoleUrls,
        post_logout_redirect_uris: options.consoleUrls,
      },
    ],
    pkce: { required: () => true, methods: ['S256'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: [GROUPS_CLAIM] },
    // The ID token carries the scopes' claims, as Cognito's does.
    conformIdTokenClaims: false,
    findAccount: (_ctx, id) => {
      const user = users.get(id);
      if (!user) return undefined;
      return {
        accountId: id,
        claims: () => ({
          sub: id,
          email: user.email,
          email_verified: true,
          [GROUPS_CLAIM]: user.groups,
        }),
      };
    },
    // The console is the issuer's own client: its sign-in needs no consent screen.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const { client, session, provider } = ctx.oidc;
      if (!client || !session?.accountId) return undefined;
      const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId);
      if (grantId) return provider.Grant.find(grantId);
      const grant = new provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
    clientBasedCORS: (_ctx, origin) => origins.has(origin),
    cookies: { keys: [cookieKey] },
    jwks: { keys: [jwk] },
    routes: { jwks: '/.well-known/jwks.json' },
    features: { devInteractions: { enabled: false }, rpInitiatedLogout: { enabled: true } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: {
      AccessToken: 3600,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 600,
      Session: 8 * 3600,
      Grant: 8 * 3600,
    },
  };
  const provider = new Provider(issuer, configuration);
  const callback = provider.callback();

  const interaction = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', issuer);
    const match = /^\/interaction\/([\w-]+)(\/login)?$/.exec(url.pathname);
    if (!match) return false;
    const uid = match[1] ?? '';
    const details = await provider.interactionDetails(request, response);
    if (details.uid !== uid) throw new Error('the interaction does not match its cookie');
    const page = (status: number, html: string) => {
      response.writeHead(status, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        // The form's answer redirects back to the console: its origins are form targets too.
        'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${[...origins].join(' ')}`,
      });
      response.end(html);
    };
    if (!match[2] && request.method === 'GET') {
      page(200, loginPage(uid));
      return true;
    }
    if (match[2] && request.method === 'POST') {
      const form = await formOf(request);
      const email = (form.get('email') ?? '').trim().toLowerCase();
      const user = users.get(subjectOf(email));
      if (!user || !samePassword(form.get('password') ?? '', user.password)) {
        page(401, loginPage(uid, 'The email or the password is not right.'));
        return true;
      }
      await provider.interactionFinished(
        request,
        response,
        { login: { accountId: subjectOf(email) } },
        { mergeWithLastSubmission: false },
      );
      return true;
    }
    return false;
  };

  const server = createServer((request, response) => {
    interaction(request, response)
      .then((handled) => {
        if (!handled) void callback(request, response);
      })
      .catch(() => {
        if (!response.headersSent) {
          response.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
        }
        response.end('The sign-in expired or is not valid: start again from the console.');
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  return {
    issuer,
    clientId: CONSOLE_CLIENT_ID,
    close: () =>
      new Promise((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  };
}
