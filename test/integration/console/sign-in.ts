import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { baseUrl, TEST_STACK, type StackPorts } from '../stack-process.js';

/**
 * Signing in to the console as a browser does, against the stack's issuer: the authorization
 * code flow with PKCE (the issuer's sign-in form posted with the user's email and password),
 * then the code exchanged for the ID token the console sends as `Authorization: Bearer`.
 */
export const CONSOLE_USERS = JSON.parse(
  readFileSync('test/fixtures/console-users.json', 'utf8'),
) as { email: string; password: string; groups: string[] }[];

export function consoleUser(email: string): { email: string; password: string } {
  const user = CONSOLE_USERS.find((candidate) => candidate.email === email);
  if (!user) throw new Error(`no console user ${email} in test/fixtures/console-users.json`);
  return user;
}

export const issuerUrl = (ports: StackPorts = TEST_STACK) => `http://127.0.0.1:${ports.port + 3}`;

/** A cookie jar for one sign-in: the issuer's session and interaction cookies. */
class Cookies {
  private readonly jar = new Map<string, string>();

  keep(response: Response): void {
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ''] = cookie.split(';');
      const at = pair.indexOf('=');
      if (at > 0) this.jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
  }

  header(): string {
    return [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

/** Follows the issuer's redirects by hand (keeping its cookies) until one leaves it. */
async function follow(start: string, cookies: Cookies, init: RequestInit = {}): Promise<string> {
  let url = start;
  let request: RequestInit = init;
  for (let hop = 0; hop < 10; hop += 1) {
    const response = await fetch(url, {
      ...request,
      redirect: 'manual',
      headers: { ...(request.headers as Record<string, string>), cookie: cookies.header() },
    });
    cookies.keep(response);
    const location = response.headers.get('location');
    if (!location) {
      throw new Error(`sign-in stopped at ${url}: ${response.status} ${await response.text()}`);
    }
    const next = new URL(location, url).toString();
    if (!next.startsWith(new URL(start).origin)) return next;
    url = next;
    request = {};
  }
  throw new Error('sign-in: too many redirects');
}

export async function signIn(
  user: { email: string; password: string },
  region: 'default' | 'au' | 'eu' = 'default',
  ports: StackPorts = TEST_STACK,
): Promise<string> {
  const issuer = issuerUrl(ports);
  const redirectUri = `${baseUrl(region, ports)}/console/`;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const state = randomBytes(8).toString('hex');
  const cookies = new Cookies();
  const authorize = new URL(`${issuer}/auth`);
  authorize.search = new URLSearchParams({
    client_id: 'cdp-console',
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid email profile',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    nonce: randomBytes(8).toString('hex'),
  }).toString();
  const login = await fetch(authorize, { redirect: 'manual' });
  cookies.keep(login);
  const form = new URL(login.headers.get('location') ?? '', issuer);
  const back = await follow(`${form.toString()}/login`, cookies, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email: user.email, password: user.password }).toString(),
  });
  const code = new URL(back).searchParams.get('code');
  if (!code || new URL(back).searchParams.get('state') !== state) {
    throw new Error(`sign-in did not come back with a code: ${back}`);
  }
  const token = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: 'cdp-console',
      code_verifier: verifier,
    }).toString(),
  });
  const tokens = (await token.json()) as { id_token?: string; error?: string };
  if (!tokens.id_token) throw new Error(`no ID token: ${JSON.stringify(tokens)}`);
  return tokens.id_token;
}

/** A call to the console's API with a user's token. */
export async function consoleCall(
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  token: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl('default')}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}
