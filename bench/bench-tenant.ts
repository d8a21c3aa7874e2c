import { FieldCatalog } from '../shared/domain/fields/field-catalog.js';
import type { Tenant } from '../shared/domain/tenancy.js';

/** A Business-plan tenant merging by email, for benchmarks that run the domain in-process. */
export function benchTenant(id: string): Tenant {
  const source = {
    name: 'Bench',
    merge_by: ['str::email'],
    merge_strategy: 2 as const,
    find_strategy: 0 as const,
  };
  return {
    instance: {
      id,
      name: id,
      region: 'default',
      plan: 'business',
      transactional_email: false,
      sending_domains: [],
      data_sources: [source],
      person_fields: [],
      organization_fields: [],
      activities: [],
    },
    dataSource: source,
    personFields: FieldCatalog.forPerson(),
    organizationFields: FieldCatalog.forOrganization(),
  };
}
