import type { APIGatewayProxyResult } from 'aws-lambda';

export type HttpResponse = APIGatewayProxyResult & {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
};

/** Every response body is JSON (DESIGN.md, Compatibility). */
export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}) {
  return {
    statusCode,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(body),
  } satisfies HttpResponse;
}
