import { ConsoleKeysResponse } from '../../shared/api/console-schemas.js';
import {
  ConsoleInstanceRequest,
  dataSourcesOf,
  managedInstance,
} from '../../shared/domain/console/console-keys.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, region } = createConsoleRuntime();

/** `POST /console/v1/keys/get`: an instance's data sources and their keys (hashes only). */
export const handler = consoleHandler(
  findRoute('POST /console/v1/keys/get'),
  { ...http, body: ConsoleInstanceRequest, response: ConsoleKeysResponse },
  async ({ body, user }) => {
    const instance = await managedInstance(config, user, region, body.instance_id);
    return {
      body: { instance_id: instance.id, data_sources: await dataSourcesOf(config, instance) },
    };
  },
);
