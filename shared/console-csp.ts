/**
 * The console's Content-Security-Policy, one for every place that serves its pages (the local
 * stack's regional servers, CloudFront on AWS): scripts only from the console's own origin (no
 * inline script), images from it and over HTTPS (an email's preview), styles from it and inline (the component library sets its theme inline),
 * requests only to its own origin (the console's API is served there too) and to the identity
 * provider's origins, no plugins, no `<base>`, and no framing.
 *
 * `identityOrigins` are the origins the sign-in talks to: locally the issuer's; on AWS the user
 * pool's issuer (`https://cognito-idp.<region>.amazonaws.com`, its discovery document and
 * keys) and its managed login domain (the token endpoint). They may be CDK tokens, so the
 * policy is built by joining strings, never by parsing them.
 */
export function consoleContentSecurityPolicy(identityOrigins: readonly string[]): string {
  const identity = identityOrigins.join(' ');
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    // Images over HTTPS too: an email's preview (a sandboxed `srcdoc` frame, which has this
    // policy) shows its images. Its own open pixel is not in the previewed HTML.
    "img-src 'self' data: https:",
    "font-src 'self'",
    `connect-src 'self' ${identity}`,
    `form-action 'self' ${identity}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
  ].join('; ');
}
