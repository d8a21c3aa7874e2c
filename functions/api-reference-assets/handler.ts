import { publicRoute } from '../../shared/http/api-handler.js';
import { packageAssets } from '../../shared/http/reference.js';
import { REFERENCE_ASSETS, findRoute } from '../../shared/routes.js';

const assets = packageAssets('swagger-ui-dist', REFERENCE_ASSETS);

/** `GET /docs/swagger-ui-bundle.js`, `GET /docs/swagger-ui.css`: the reference page's renderer. */
export const handler = publicRoute(findRoute('GET /docs/swagger-ui-bundle.js'), (event) =>
  Promise.resolve(assets(event.path, event.headers['accept-encoding'])),
);
