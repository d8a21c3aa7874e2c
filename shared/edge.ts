/**
 * What stands in front of the functions on AWS, and what the local HTTP adapter does the same
 * way: API Gateway (REST API, Lambda proxy integration, payload format 1.0) behind an AWS WAF
 * web ACL. The limits and the envelopes of the errors the edge itself answers live here, so
 * the CDK stack (gateway responses, the WAF rule) and the local adapter cannot drift apart.
 *
 * Why the body limit is lower than the spec's 6 MB: a synchronous Lambda invocation carries at
 * most 6,291,556 bytes, event included. The API declares every media type binary, so every
 * body reaches the function base64-encoded (4/3 of its size, whatever its content; a text body
 * would be JSON-escaped instead, and a body of quotes or control characters doubles or grows
 * sixfold). With the headers (at most 10 KB on a REST API, present twice in a 1.0 event) and
 * the rest of the event well under 64 KB, a body of at most 4,500,000 bytes always fits:
 * 4,500,000 × 4/3 = 6,000,000. A larger body would make the invocation fail, which API Gateway
 * answers with a bare 502; the WAF rule refuses it first, by its `Content-Length`.
 */
/** A synchronous invocation's event, and its response, each at most this (else a 502). */
export const LAMBDA_MAX_EVENT_BYTES = 6_291_556;
/** The largest request body any endpoint accepts (the transactional send's). */
export const EDGE_MAX_BODY_BYTES = 4_500_000;
/** API Gateway's own cap, which it enforces before WAF has a say on larger bodies. */
export const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;
/** API Gateway (REST): the request line and headers together. */
export const GATEWAY_MAX_HEADER_BYTES = 10_240;

/** The API Gateway stage name: the regional address is `https://<id>.execute-api.<region>.amazonaws.com/api`. */
export const STAGE_NAME = 'api';

/**
 * The errors the edge answers without a function, each as the error envelope (the gateway
 * response templates of the REST API, and the local adapter's answers).
 */
export const EDGE_ERRORS = {
  /** The WAF rule: a body over the edge limit, or one sent without a `Content-Length`. */
  bodyRefused: {
    status: 413,
    message: `Request body too large: the limit is ${EDGE_MAX_BODY_BYTES} bytes, sent with a Content-Length header`,
  },
  gatewayTooLarge: {
    status: 413,
    message: `Request body too large: the limit is ${EDGE_MAX_BODY_BYTES} bytes`,
  },
  headersTooLarge: {
    status: 431,
    message: `Request headers too large: the limit is ${GATEWAY_MAX_HEADER_BYTES} bytes`,
  },
  throttled: {
    status: 429,
    message: 'Too many requests to this regional API: retry after a second',
  },
  integrationFailure: {
    status: 502,
    message: 'The endpoint failed to answer: retry later',
  },
  integrationTimeout: {
    status: 504,
    message: 'The endpoint did not answer in time: retry later',
  },
} as const;

/**
 * A regular expression matching the decimal numbers greater than `limit` (for a header value):
 * WAF cannot compare numbers, but it can match patterns. Leading zeros are allowed.
 */
export function numbersAbove(limit: number): string {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new Error(`Bad limit ${limit}`);
  const digits = String(limit);
  // Any number with more digits than the limit.
  const alternatives = [`[1-9][0-9]{${digits.length},}`];
  // Same length: equal up to position i, greater at i, anything after.
  for (let i = 0; i < digits.length; i += 1) {
    const digit = Number(digits[i]);
    if (digit === 9) continue;
    const rest = digits.length - i - 1;
    const prefix = digits.slice(0, i);
    const greater = digit === 8 ? '9' : `[${digit + 1}-9]`;
    alternatives.push(`${prefix}${greater}${rest > 0 ? `[0-9]{${rest}}` : ''}`);
  }
  return `^0*(?:${alternatives.join('|')})$`;
}
