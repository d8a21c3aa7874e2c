import { z } from 'zod';
import { sendTransactional } from '../../shared/domain/email/send.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import {
  createApiRuntime,
  createEmailPorts,
  createLocationServices,
  createPeopleStore,
  emailLinks,
} from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { TransactionalSendResponse } from '../../shared/api/schemas.js';

const { http, db, env, config, signingKeys } = createApiRuntime();
const people = createPeopleStore(db);
const location = createLocationServices(people);
const email = createEmailPorts(db);
const links = emailLinks(env, signingKeys, email.env.PUBLIC_BASE_URL);

/**
 * `POST /v1/transactional/send`: the body is checked by the domain after the feature and plan
 * gates (a 403 comes before any complaint about the body), then 202 once every email is
 * rendered and queued.
 */
export const handler = apiHandler(
  findRoute('POST /v1/transactional/send'),
  { ...http, body: z.record(z.string(), z.unknown()), response: TransactionalSendResponse },
  async ({ body, tenant, requestId }) => ({
    status: 202,
    body: await sendTransactional(body, {
      tenant,
      people: { store: people, location },
      readPeople: (ids) => people.getPeople(tenant.instance.id, ids, true),
      templates: config,
      emails: email.store,
      queue: email.queue,
      links: await links(tenant.instance.id),
      fallbackDomain: email.env.EMAIL_FALLBACK_DOMAIN,
      requestId,
    }),
  }),
);
