import { describe, expect, it } from '@jest/globals';
import { consoleContentSecurityPolicy } from '../../../shared/console-csp.js';
import { contentSecurityPolicy } from '../../../local/console-site.js';

/** One Content-Security-Policy for the console wherever it is served (local, CloudFront). */
describe("the console's Content-Security-Policy", () => {
  it('allows scripts from the console only, requests to it and the identity provider, no framing', () => {
    const policy = consoleContentSecurityPolicy([
      'https://cognito-idp.eu-central-1.amazonaws.com',
      'https://cdp-eu-1.auth.eu-central-1.amazoncognito.com',
    ]);
    const directives = Object.fromEntries(
      policy.split('; ').map((directive): [string, string[]] => {
        const [name = '', ...values] = directive.split(' ');
        return [name, values];
      }),
    );
    expect(directives).toEqual({
      'default-src': ["'self'"],
      'script-src': ["'self'"],
      'style-src': ["'self'", "'unsafe-inline'"],
      'img-src': ["'self'", 'data:', 'https:'],
      'font-src': ["'self'"],
      'connect-src': [
        "'self'",
        'https://cognito-idp.eu-central-1.amazonaws.com',
        'https://cdp-eu-1.auth.eu-central-1.amazoncognito.com',
      ],
      'form-action': [
        "'self'",
        'https://cognito-idp.eu-central-1.amazonaws.com',
        'https://cdp-eu-1.auth.eu-central-1.amazoncognito.com',
      ],
      'frame-ancestors': ["'none'"],
      'base-uri': ["'none'"],
      'object-src': ["'none'"],
    });
  });

  it('is the local stack’s too, with the local issuer’s origin', () => {
    expect(contentSecurityPolicy('http://127.0.0.1:3003/some/path')).toBe(
      consoleContentSecurityPolicy(['http://127.0.0.1:3003']),
    );
  });
});
