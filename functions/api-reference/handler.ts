import { publicRoute } from '../../shared/http/api-handler.js';
import { REFERENCE_PAGE_POLICY, referencePage } from '../../shared/http/reference.js';
import { findRoute } from '../../shared/routes.js';

/** `GET /docs`: the API reference page (Swagger UI rendering `/openapi.json`); no key needed. */
export const handler = publicRoute(findRoute('GET /docs'), () => Promise.resolve(referencePage()), {
  contentSecurityPolicy: REFERENCE_PAGE_POLICY,
});
