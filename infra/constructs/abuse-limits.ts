import type { CfnFunction, Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import type { Region } from '../../shared/domain/regions.js';

/**
 * Limits on what one caller can cost the deployment, at the edge and in Lambda
 * (docs/operations.md "Abuse limits"). Kept apart from the stacks so that they can move
 * with them.
 */

/** Requests to the email links (`/t/…`) one address may make in five minutes. */
export const TRACKING_REQUESTS_PER_5_MIN = 6_000;
/** Requests with an `X-Api-Key` too short to be any key, per address, in five minutes. */
export const SHORT_KEY_REQUESTS_PER_5_MIN = 100;

type Rule = CfnWebACL.RuleProperty;

/** A 429 in the error envelope (WAF answers it: no request reaches a function). */
function tooMany(): CfnWebACL.RuleActionProperty {
  return {
    block: {
      customResponse: {
        responseCode: 429,
        customResponseBodyKey: 'too-many',
        responseHeaders: [{ name: 'Retry-After', value: '60' }],
      },
    },
  };
}

/** The custom response bodies the rules use (the WebACL's `customResponseBodies`). */
export const EDGE_RESPONSE_BODIES: Record<string, CfnWebACL.CustomResponseBodyProperty> = {
  'too-many': {
    contentType: 'APPLICATION_JSON',
    content: JSON.stringify({
      request_id: 'edge',
      code: 429,
      error: 'Too many requests from this address: retry after 60 seconds',
    }),
  },
};

/**
 * The per-address rate rules of the edge's WebACL:
 *
 * - the public email links: a replayed pixel or link from one address is cut off at the edge
 *   (the functions record an open or a click once per message and link an hour anyway); the
 *   limit is high because mail providers fetch images for many readers from few addresses;
 * - keys that cannot be any key (shorter than the 32 characters every key has): an address
 *   sending them is probing. Well-formed unknown keys are limited per address in the
 *   functions (`CDP_UNKNOWN_KEYS_PER_MINUTE`), which see the answer the edge cannot.
 */
export function edgeRateRules(
  region: Region,
  visibility: (metricName: string) => CfnWebACL.VisibilityConfigProperty,
  firstPriority: number,
): Rule[] {
  return [
    {
      name: 'tracking-links-per-address',
      priority: firstPriority,
      action: tooMany(),
      visibilityConfig: visibility(`cdp-${region}-tracking-links-per-address`),
      statement: {
        rateBasedStatement: {
          limit: TRACKING_REQUESTS_PER_5_MIN,
          evaluationWindowSec: 300,
          aggregateKeyType: 'IP',
          scopeDownStatement: {
            byteMatchStatement: {
              fieldToMatch: { uriPath: {} },
              positionalConstraint: 'CONTAINS',
              searchString: '/t/',
              textTransformations: [{ priority: 0, type: 'NONE' }],
            },
          },
        },
      },
    },
    {
      name: 'short-keys-per-address',
      priority: firstPriority + 1,
      action: tooMany(),
      visibilityConfig: visibility(`cdp-${region}-short-keys-per-address`),
      statement: {
        rateBasedStatement: {
          limit: SHORT_KEY_REQUESTS_PER_5_MIN,
          evaluationWindowSec: 300,
          aggregateKeyType: 'IP',
          scopeDownStatement: {
            sizeConstraintStatement: {
              fieldToMatch: { singleHeader: { Name: 'x-api-key' } },
              comparisonOperator: 'LT',
              size: 32,
              textTransformations: [{ priority: 0, type: 'NONE' }],
            },
          },
        },
      },
    },
  ];
}

/** A function's reserved concurrency (`reservedConcurrency` in the routes table), if any. */
export function reserveConcurrency(
  fn: LambdaFunction,
  spec: { reservedConcurrency?: number | undefined },
): void {
  if (spec.reservedConcurrency === undefined) return;
  (fn.node.defaultChild as CfnFunction).reservedConcurrentExecutions = spec.reservedConcurrency;
}
