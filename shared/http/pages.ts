import type { HttpResponse } from './responses.js';

/** A small HTML page (the unsubscribe links' answers): no scripts, nothing from elsewhere. */
export function htmlPage(title: string, body: string): HttpResponse {
  return {
    statusCode: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
    },
    body: `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}button{font-size:1rem;padding:.5rem 1.25rem}</style>
</head><body><h1>${title}</h1>
${body}
</body></html>`,
  };
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
