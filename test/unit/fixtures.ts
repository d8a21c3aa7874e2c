import { newBuild, type Audience } from '../../shared/domain/audiences/audience.js';
import { FieldCatalog } from '../../shared/domain/fields/field-catalog.js';
import type { InstanceSchema, Tenant } from '../../shared/domain/tenancy.js';
import { OfflineGeocoder } from '../../shared/adapters/geocoders.js';
import type { LocationServices } from '../../shared/domain/location.js';

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

/** An audience definition for tests: version 1 with its first build unless overridden. */
export function testAudience(
  id: string,
  filter: unknown,
  overrides: Partial<Audience> = {},
): Audience {
  const at = '2026-11-01T00:00:00.000Z';
  const version = overrides.version ?? 1;
  return {
    id,
    name: `Audience ${id}`,
    filter,
    is_public: false,
    public_name: '',
    public_description: '',
    sms_is_public: false,
    sms_public_name: '',
    sms_public_description: '',
    created: at,
    edited_at: at,
    version,
    build: newBuild(version, at),
    ...overrides,
  };
}

/**
 * A tenant with two data sources: `Web` merging by email, and `Crm` (its second) by the unique
 * custom field `str:cm:crm-id`, then email.
 */
export function webAndCrmTenant(): Tenant {
  return testTenant({
    data_sources: [
      { name: 'Web', merge_by: ['str::email'], merge_strategy: 2, find_strategy: 0 },
      {
        name: 'Crm',
        merge_by: ['str:cm:crm-id', 'str::email'],
        merge_strategy: 2,
        find_strategy: 0,
      },
    ],
    person_fields: [{ id: 'str:cm:crm-id', name: 'CRM ID', unique: true }],
    key_fields: { 'str:cm:crm-id': 'active' },
  });
}

/** Location services that know no IP and geocode offline, metering nothing. */
export const offlineLocation: LocationServices = {
  ipLocator: { locate: () => Promise.resolve(undefined) },
  geocoder: new OfflineGeocoder(),
  meter: { record: () => Promise.resolve() },
};
