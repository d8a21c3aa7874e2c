import { DeliveriesGetRequest, getDeliveries } from '../../shared/domain/webhooks/attempts.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createAttemptServices } from '../../shared/worker/webhook-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { DeliveriesGetResponse } from '../../shared/api/schemas.js';

const { http, db, cursors } = createApiRuntime();
const services = createAttemptServices(db);

/** `POST /v1/webhooks/deliveries/get`: an endpoint's delivery attempts, newest first. */
export const handler = apiHandler(
  findRoute('POST /v1/webhooks/deliveries/get'),
  { ...http, body: DeliveriesGetRequest, response: DeliveriesGetResponse },
  async ({ body, tenant }) => ({
    body: await getDeliveries(
      body,
      tenant,
      services(await cursors(tenant.instance.id, 'webhooks/deliveries/get')),
    ),
  }),
);
