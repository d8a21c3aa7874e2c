import { FieldCatalog } from '../../shared/domain/fields/field-catalog.js';
import type { InstanceSchema, Tenant } from '../../shared/domain/tenancy.js';

/** A tenant for unit tests: instance `acme`, Business plan, merging by email; its first data source calls. */
export function testTenant(overrides: Partial<InstanceSchema> = {}): Tenant {
  const instance: InstanceSchema = {
    id: 'acme',
    name: 'Acme',
    region: 'default',
    plan: 'business',
    transactional_email: false,
    sending_domains: [],
    data_sources: [{ name: 'Web', merge_by: ['str::email'], merge_strategy: 2, find_strategy: 0 }],
    person_fields: [],
    organization_fields: [],
    activities: [],
    ...overrides,
  };
  const [dataSource] = instance.data_sources;
  if (!dataSource) throw new Error('a test tenant needs a data source');
  return {
    instance,
    dataSource,
    personFields: FieldCatalog.forPerson(instance.person_fields),
    organizationFields: FieldCatalog.forOrganization(instance.organization_fields),
  };
}
