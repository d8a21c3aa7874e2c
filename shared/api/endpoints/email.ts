import { z } from 'zod';
import { TransactionalGetRequest } from '../../domain/email/email-status.js';
import { EmailEntry, TransactionalSendRequest } from '../../domain/email/send-request.js';
import type { RouteKey } from '../../routes.js';
import {
  Location,
  PersonFieldsInput,
  TransactionalGetResponse,
  TransactionalSendResponse,
} from '../schemas.js';
import { html, ids, type Endpoint } from './common.js';

/** Bodies documented with the real shape of the records the domain reads one by one. */
const TransactionalSendBody = TransactionalSendRequest.extend({
  emails: z
    .array(EmailEntry.extend({ fields: PersonFieldsInput, location: Location.optional() }))
    .min(1)
    .max(100),
}).meta({ id: 'TransactionalSendRequest' });

const token = z.object({
  t: z.string().meta({ description: 'The signed token of the link, as the email holds it' }),
});

/** Transactional email (`transactional/*`) and the signed links inside sent emails (`/t/*`). */
export const EMAIL = {
  'POST /v1/transactional/send': {
    tag: 'Transactional email',
    summary: 'Send transactional email',
    description:
      'Sends 1 to 100 emails, each to a person found or created by `merge_by`. Needs the transactional email feature and a Business or Enterprise plan (403 otherwise, before the body is looked at). Subject and body are Liquid templates (`{{ people.first-name }}`, `{{ json.<key> }}`); `campaign_id`/`asset_id` use a stored template. Answers 202 once every email is rendered and queued.',
    request: TransactionalSendBody,
    requestExample: {
      asset: {
        from_email: 'team@mail.example.com',
        from_name: 'Example Team',
        subject: 'Welcome, {{ people.first-name }}',
        email_name: 'welcome',
        html_body: '<html><body><p>Hi {{ people.first-name }}!</p></body></html>',
      },
      emails: [{ fields: { 'str::email': 'ada@example.com', 'str::first': 'Ada' } }],
      merge_by: ['str::email'],
    },
    responses: {
      202: {
        description: 'Every email was validated, rendered, recorded and queued',
        schema: TransactionalSendResponse,
        example: {
          emails: [
            {
              person_id: ids.person,
              contact_status: 'created',
              email_status: 'queued',
              message_id: ids.message,
              email_name: 'welcome',
            },
          ],
        },
      },
    },
    errors: [403],
  },
  'POST /v1/transactional/get': {
    tag: 'Transactional email',
    summary: 'State and events of sent emails',
    description:
      'Where each email stands (`queued`, `sent`, `failed`, `bounced`, `complained`, `suppressed`) with its events, in the order asked. An ID of no email of the instance is an entry with `error: "not found"`; 404 when none is found.',
    request: TransactionalGetRequest,
    requestExample: { message_ids: [ids.message] },
    responses: {
      200: {
        description: 'The emails asked for',
        schema: TransactionalGetResponse,
        example: {
          emails: [
            {
              message_id: ids.message,
              person_id: ids.person,
              email_name: 'welcome',
              status: 'sent',
              events: [
                { type: 'queued', at: '2026-01-05T10:00:00.000Z' },
                { type: 'sent', at: '2026-01-05T10:00:01.000Z' },
              ],
            },
          ],
        },
      },
    },
    errors: [404],
  },
  'GET /t/c': {
    tag: 'Email links',
    summary: 'Tracked link of an email',
    description:
      'Records the click (`act::c`) and redirects to the destination stored with the email (never one taken from the URL).',
    query: token,
    responses: {
      302: {
        description: 'To the link’s destination',
        headers: ['Location', 'Cache-Control'],
      },
    },
    errors: [404],
  },
  'GET /t/o': {
    tag: 'Email links',
    summary: 'Open pixel of an email',
    description: 'Records the open (`act::o`) and answers a transparent 1×1 GIF.',
    query: token,
    responses: {
      200: {
        description: 'The pixel',
        content: { type: 'image/gif', description: 'A 1×1 transparent GIF' },
        headers: ['Cache-Control'],
      },
    },
    errors: [404],
  },
  'GET /t/u': {
    tag: 'Email links',
    summary: 'Unsubscribe page',
    description:
      'Shows the address (masked) and a button; changes nothing, since mail scanners follow links.',
    query: token,
    responses: { 200: html('The confirmation page') },
    errors: [404],
  },
  'POST /t/u': {
    tag: 'Email links',
    summary: 'Unsubscribe',
    description:
      'Unsubscribes the email’s person (`bol::p` false, `act::u-all`): RFC 8058 one-click (`List-Unsubscribe=One-Click`) or the page’s button.',
    query: token,
    responses: { 200: html('The confirmation') },
    errors: [404],
  },
} satisfies Partial<Record<RouteKey, Endpoint>>;
