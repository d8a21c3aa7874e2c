import { publicHandler } from '../../shared/http/api-handler.js';

const region = process.env.CDP_REGION ?? 'default';

/** `GET /health`: 200 once the function can answer; no key needed. */
export const handler = publicHandler(() => Promise.resolve({ body: { status: 'ok', region } }));
