import { expect } from '@jest/globals';
import { simpleParser } from 'mailparser';
import { KEYS, TEST_STACK, WORKER_PATIENCE_MS, call } from './stack.js';
import { checkedFetch } from '../contract.js';

/** Helpers for the transactional email tests: send, and wait for an email's status. */
export type Body = Record<string, unknown>;

export interface Entry {
  person_id?: string;
  contact_status: string;
  email_status: string;
  message_id?: string;
  email_name?: string;
  error?: string;
}

export const html = (inner: string) => `<html><body>${inner}</body></html>`;

/** An asset of the mailer instance (from its sending domain), with overrides. */
export function asset(overrides: Body = {}): Body {
  return {
    from_email: 'team@mail.mailer.test',
    from_name: 'Mailer Team',
    subject: 'Hello {{ people.first-name }}',
    email_name: 'hello',
    html_body: html('<p>Hi {{ people.first-name }}</p>'),
    ...overrides,
  };
}

export async function send(body: Body, apiKey: string = KEYS.mailer) {
  return call('/v1/transactional/send', { key: apiKey, body });
}

export async function sendOk(body: Body): Promise<Entry[]> {
  const response = await send({ merge_by: ['str::email'], ...body });
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 202 });
  return response.body.emails as Entry[];
}

export async function statusOf(messageId: string): Promise<Body> {
  const response = await call('/v1/transactional/get', {
    key: KEYS.mailer,
    body: { message_ids: [messageId] },
  });
  expect(response.status).toBe(200);
  return (response.body.emails as Body[])[0] as Body;
}

export async function until<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + WORKER_PATIENCE_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

export async function settledStatus(messageId: string, wanted: string[]): Promise<Body> {
  return until(`email ${messageId} to be ${wanted.join('|')}`, async () => {
    const status = await statusOf(messageId);
    return wanted.includes(status.status as string) ? status : undefined;
  });
}

export interface LinkTokens {
  click: string;
  open: string;
  unsubscribe: string;
}

/**
 * The tokens of a message's links (its first tracked link, its pixel and its unsubscribe
 * link, which its HTML must hold), read from the mail the SES stand-in received.
 */
export async function linkTokensOf(instanceId: string, messageId: string): Promise<LinkTokens> {
  const mail = await sentMail(instanceId, messageId);
  const token = (path: string) => {
    const found = new RegExp(`${path.replace('/', '\\/')}\\?t=([A-Za-z0-9_.-]+)`).exec(
      mail.html || '',
    )?.[1];
    if (!found) throw new Error(`no ${path} link in ${messageId}`);
    return found;
  };
  return { click: token('/t/c'), open: token('/t/o'), unsubscribe: token('/t/u') };
}

/** A message as the SES stand-in received it (waiting for it), parsed. */
export async function sentMail(instanceId: string, messageId: string) {
  const ses = `http://127.0.0.1:${TEST_STACK.sesPort}`;
  const sent = await until(`SES to receive ${messageId}`, async () => {
    const listed = (await (await fetch(`${ses}/messages`)).json()) as {
      messages: { messageId: string; tags: Record<string, string> }[];
    };
    return listed.messages.find((m) => m.tags.cdp_message === `${instanceId}_${messageId}`);
  });
  return simpleParser(await (await fetch(`${ses}/raw/${sent.messageId}`)).text());
}

/** A link of an email followed as a mail client would: no redirects; a POST is one-click. */
export function fetchLink(link: string, method: 'GET' | 'POST' = 'GET'): Promise<Response> {
  return checkedFetch(link, {
    method,
    redirect: 'manual',
    ...(method === 'POST'
      ? {
          body: 'List-Unsubscribe=One-Click',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }
      : {}),
  });
}
