import { z } from 'zod';
import { REFERENCE_ASSETS, type RouteKey } from '../../routes.js';
import { HealthResponse } from '../schemas.js';
import { html, type Endpoint } from './common.js';

/**
 * The service itself (no key): `GET /health`, `GET /openapi.json` and the reference page
 * (`GET /docs`, its files).
 */
export const SERVICE = {
  'GET /health': {
    tag: 'Service',
    summary: 'Health of the regional API',
    description: 'Answers 200 once the regional deployment can serve requests. No key needed.',
    responses: {
      200: {
        description: 'Ready',
        schema: HealthResponse,
        example: { status: 'ok', region: 'default' },
      },
    },
  },
  'GET /openapi.json': {
    tag: 'Service',
    summary: 'This document',
    description:
      'The OpenAPI 3.1 document of the API, with this deployment’s addresses as its servers (its own region first). No key needed.',
    responses: {
      200: {
        description: 'The OpenAPI document',
        schema: z.looseObject({ openapi: z.literal('3.1.0') }),
        headers: ['Cache-Control'],
      },
    },
  },
  'GET /docs': {
    tag: 'Service',
    summary: 'API reference page',
    description:
      'This document rendered by Swagger UI (served by the API itself, nothing loaded from elsewhere). No key needed.',
    responses: { 200: html('The reference page') },
  },
  ...Object.fromEntries(
    REFERENCE_ASSETS.map((file) => [
      `GET /docs/${file}`,
      {
        tag: 'Service',
        summary: `Reference page renderer: ${file}`,
        description: 'A file of Swagger UI (npm package `swagger-ui-dist`), gzipped when accepted.',
        responses: {
          200: {
            description: file,
            content: {
              type: file.endsWith('.css') ? 'text/css' : 'text/javascript',
              description: file,
            },
            headers: ['Cache-Control'],
          },
        },
      } satisfies Endpoint,
    ]),
  ),
} satisfies Partial<Record<RouteKey, Endpoint>>;
