import {
  AudienceSubscribeRequest,
  subscribeToAudience,
} from '../../shared/domain/audiences/subscribe.js';
import { NotFoundError } from '../../shared/domain/errors.js';
import { acceptIngest } from '../../shared/domain/ingest/ingest.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import {
  createApiRuntime,
  createIngestPorts,
  createPeopleStore,
} from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AudienceSubscribeResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { store, memberships } = createAudienceServices(db);
const people = createPeopleStore(db);
const ingest = createIngestPorts(db);

/**
 * `PUT /v1/audience/subscribe`: members' email and SMS choices for one audience; with
 * `async: true` accepted (the audience checked) and applied by the ingest worker.
 */
export const handler = apiHandler(
  findRoute('PUT /v1/audience/subscribe'),
  { ...http, body: AudienceSubscribeRequest, response: AudienceSubscribeResponse },
  async ({ body, tenant }) => {
    if (!body.async) {
      return {
        body: await subscribeToAudience(body, tenant, { audiences: store, people, memberships }),
      };
    }
    const accepted = await acceptIngest(
      {
        kind: 'audience-subscribe',
        body,
        records: body.people.length,
        check: async () => {
          if (!(await store.get(tenant.instance.id, body.audience_id))) {
            throw new NotFoundError(`audience_id: no audience ${body.audience_id}`, [
              { field: 'audience_id', error: 'no such audience' },
            ]);
          }
        },
      },
      tenant,
      ingest,
    );
    return { body: accepted };
  },
);
