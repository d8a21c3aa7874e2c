import { ConsoleDataSourceModifyRequest } from '../../domain/console/console-data-sources.js';
import type { RouteKey } from '../../routes.js';
import { ConsoleDataSourceResponse } from '../console-schemas.js';
import type { Endpoint } from './common.js';

const NOT_YOURS =
  'An instance the user may not manage is answered 404, as one that does not exist.';

/** The console's data sources, changed (docs/console.md). */
export const CONSOLE_HOSTING = {
  'PUT /console/v1/data-sources/modify': {
    tag: 'Console',
    summary: "Change a data source's merge preferences",
    description: `New merge preferences (\`merge_by\`, \`merge_strategy\`, \`find_strategy\`, all three given) for a data source made in the console, checked by the configuration file's rules as when it was made; its keys keep working and merge and find by them from the next request on (people already stored are not changed). Recorded in the audit log with the preferences before and after. 404 for a data source the instance does not have; 409 for one the configuration file declares (change it in the file: \`apply\` would put the file's back). ${NOT_YOURS}`,
    request: ConsoleDataSourceModifyRequest,
    requestExample: {
      instance_id: 'acme',
      data_source: {
        name: 'Mobile app',
        merge_by: ['str::email', 'str::ei'],
        merge_strategy: 1,
        find_strategy: 2,
      },
    },
    errors: [404, 409],
    responses: {
      200: {
        description: 'The data source with its new preferences',
        schema: ConsoleDataSourceResponse,
        example: {
          instance_id: 'acme',
          data_source: {
            name: 'Mobile app',
            merge_by: ['str::email', 'str::ei'],
            merge_strategy: 1,
            find_strategy: 2,
          },
        },
      },
    },
  },
} satisfies Partial<Record<RouteKey, Endpoint>>;
