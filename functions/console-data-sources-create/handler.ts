import { ConsoleDataSourceResponse } from '../../shared/api/console-schemas.js';
import {
  ConsoleDataSourceRequest,
  createConsoleDataSource,
} from '../../shared/domain/console/console-data-sources.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `POST /console/v1/data-sources/create`: a data source with its merge preferences. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/data-sources/create'),
  { ...http, body: ConsoleDataSourceRequest, response: ConsoleDataSourceResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await createConsoleDataSource(config, audit, { user, sourceIp, requestId }, region, body),
  }),
);
