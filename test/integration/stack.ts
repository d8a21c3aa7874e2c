import type { Region } from '../../shared/domain/regions.js';
import { baseUrl } from './stack-process.js';

export * from './stack-process.js';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** One call to a regional API, as a client would make it. */
export async function call(
  path: string,
  options: {
    key?: string;
    body?: unknown;
    rawBody?: string;
    method?: string;
    region?: Region;
    headers?: Record<string, string>;
  } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...options.headers,
  };
  if (options.key !== undefined) headers['x-api-key'] = options.key;
  const response = await fetch(`${baseUrl(options.region ?? 'default')}${path}`, {
    method: options.method ?? 'POST',
    headers,
    body:
      options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: JSON.parse(text) as Record<string, unknown>,
  };
}
