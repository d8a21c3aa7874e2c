import { createRemoteJWKSet, jwtVerify } from 'jose';
import { SignInRequiredError } from '../domain/errors.js';
import { consoleUserOf, type ConsoleUser } from '../domain/console/console-user.js';

/** Turns a console request's bearer token into its user, or refuses it (401). */
export type ConsoleVerifier = (token: string | undefined) => Promise<ConsoleUser>;

export interface ConsoleIssuerSettings {
  /** The identity provider's issuer: Cognito's `https://cognito-idp.<region>.amazonaws.com/<pool>`. */
  issuer: string;
  /** The console's app client: an ID token's audience. */
  clientId: string;
  /** Where the issuer publishes its keys (default `<issuer>/.well-known/jwks.json`, Cognito's). */
  jwksUrl?: string;
}

/**
 * Verifies the console's ID tokens with jose: signature by a key the issuer publishes
 * (fetched at most every 10 minutes, and again when a token names a key not yet seen),
 * issuer, audience (the console's app client), expiry (5 s of clock skew), RS256 only. The
 * addresses come from the deployment's settings, never from the token.
 */
export function consoleTokenVerifier(settings: ConsoleIssuerSettings): ConsoleVerifier {
  const jwks = createRemoteJWKSet(
    new URL(settings.jwksUrl ?? `${settings.issuer.replace(/\/$/, '')}/.well-known/jwks.json`),
    { cacheMaxAge: 10 * 60_000, cooldownDuration: 30_000, timeoutDuration: 5_000 },
  );
  return async (token) => {
    if (token === undefined || token === '') throw new SignInRequiredError();
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(token, jwks, {
        issuer: settings.issuer,
        audience: settings.clientId,
        algorithms: ['RS256'],
        clockTolerance: 5,
        requiredClaims: ['sub', 'exp', 'iat'],
      }));
    } catch (error) {
      if (isFetchFailure(error)) throw error;
      throw new SignInRequiredError('the token is not valid or has expired: sign in again');
    }
    try {
      return consoleUserOf(claims);
    } catch {
      throw new SignInRequiredError('the token is not an ID token of a console user');
    }
  };
}

/** The issuer's keys could not be fetched: a fault of ours, not the caller's (500). */
function isFetchFailure(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === 'ERR_JWKS_TIMEOUT' || (error instanceof Error && error.name === 'TypeError');
}

/** The token of `Authorization: Bearer <token>`, if the header says so. */
export function bearerTokenOf(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}
