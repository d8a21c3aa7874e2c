import { ConsoleDataSourceResponse } from '../../shared/api/console-schemas.js';
import {
  ConsoleDataSourceModifyRequest,
  modifyConsoleDataSource,
} from '../../shared/domain/console/console-data-sources.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `PUT /console/v1/data-sources/modify`: new merge preferences for a data source. */
export const handler = consoleHandler(
  findRoute('PUT /console/v1/data-sources/modify'),
  { ...http, body: ConsoleDataSourceModifyRequest, response: ConsoleDataSourceResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await modifyConsoleDataSource(config, audit, { user, sourceIp, requestId }, region, body),
  }),
);
