import { mergePeople, type MergeContext } from '../people/merge-people.js';
import { EMAIL_PERMISSION, PERSON_ID } from '../people/person.js';
import { serviceTenant, type Tenant, type TenantDirectory } from '../tenancy.js';

/**
 * Unsubscribes an email's person (a one-click unsubscribe, a complaint): `bol::p` false with
 * its context message, through person merge, so that the permission's counters move and
 * `act::u-all` is recorded when the permission actually changes (once). False when the
 * person no longer exists.
 */
export async function unsubscribePerson(
  tenant: Tenant,
  personId: string,
  context: string,
  people: Omit<MergeContext, 'tenant'>,
): Promise<boolean> {
  const [result] = await mergePeople(
    {
      people: [
        { fields: { [PERSON_ID]: personId, [EMAIL_PERMISSION]: false, 'str::u-ctx': context } },
      ],
      merge_by: [PERSON_ID],
      merge_strategy: 2,
    },
    { tenant, ...people },
  );
  // Invalid: the person is gone (erased); there is no one left to unsubscribe.
  return result !== undefined && result.status !== 'invalid';
}

/**
 * Unsubscribing as the service (a link, a complaint): the change is recorded as made by
 * `source`. False when the instance or the person no longer exists.
 */
export function unsubscriber(
  directory: Pick<TenantDirectory, 'getInstance'>,
  source: string,
  people: Omit<MergeContext, 'tenant'>,
) {
  return async (instanceId: string, personId: string, context: string): Promise<boolean> => {
    const tenant = await serviceTenant(directory, instanceId, source);
    return tenant ? unsubscribePerson(tenant, personId, context, people) : false;
  };
}
