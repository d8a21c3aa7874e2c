import { z } from 'zod';
import { NotFoundError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import type { CursorCodec } from '../cursor.js';
import type { Region } from '../regions.js';
import {
  getPersonActivities,
  PersonActivitiesRequest,
  type ActivityFeedPorts,
} from '../people/person-activities.js';
import {
  getPeopleByIds,
  ORGANIZATION_FIELD,
  TAGS_FIELD,
  type ListingPorts,
  type PersonListing,
} from '../people/person-get.js';
import { CREATED_FIELD, LAST_SEEN_FIELD } from '../people/system-fields.js';
import type { Membership } from '../audiences/membership.js';
import { consoleTenant } from './console-activities.js';
import { filterFieldsOf } from './console-audiences.js';
import { emailSummary, type EmailLogReader } from './console-emails.js';
import { type ConsoleCaller, ConsoleInstanceId, type ConsoleStore } from './console-keys.js';
import { peoplePage } from './console-listing.js';

/**
 * People in the console: a search over the instance's people (the API's `person/get`, its
 * `q`, paging and totals) and one person's profile: every field with its label, tags,
 * organization, the activity timeline as display text (the API's `person/get/activities`),
 * the emails sent to the person (the references kept with each email) and the audiences
 * they are in (their memberships' partition). Reads only: nothing here changes a person.
 */
const instanceId = ConsoleInstanceId;
export const ConsolePeopleRequest = z.strictObject({
  instance_id: instanceId,
  q: z.string().max(255).optional(),
  /** A filter in the API's filter language (`person/get`'s, the audiences' too). */
  filter: z.record(z.string(), z.unknown()).optional(),
  limit: z.number().int().min(1).max(100).default(25),
  offset: z.number().int().min(0).max(10_000_000).default(0),
  cursor_id: z.string().max(2000).optional(),
});
export const ConsoleProfileRequest = z.strictObject({
  instance_id: instanceId,
  person_id: z.string().regex(ID_PATTERN, 'expected a person ID (24 hexadecimal characters)'),
});

export async function peopleOf(
  store: Pick<ConsoleStore, 'getInstance'>,
  ports: ListingPorts,
  cursors: (instanceId: string) => Promise<CursorCodec>,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsolePeopleRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const page = await peoplePage(
    tenant,
    request,
    { q: request.q, filter: request.filter },
    ports,
    cursors,
  );
  // The fields a filter can name, with their operators: what the page's filter offers.
  return { instance_id: tenant.instance.id, ...page, filter_fields: filterFieldsOf(tenant) };
}

/** The emails a profile lists (the newest). */
export const PROFILE_EMAILS = 10;

/** What a profile reads besides the person: their emails, and their audiences. */
export interface ProfileExtras {
  emails: Pick<EmailLogReader, 'ofPerson'>;
  /** The person's memberships (one read of their partition), and the audiences' names. */
  membershipsOf(instanceId: string, personId: string): Promise<ReadonlyMap<string, Membership>>;
  audienceNames(instanceId: string): Promise<Map<string, string>>;
}

export async function profileOf(
  store: Pick<ConsoleStore, 'getInstance'>,
  people: Pick<PersonListing, 'getPeople'>,
  feed: (
    instance: Awaited<ReturnType<typeof consoleTenant>>['instance'],
  ) => Promise<ActivityFeedPorts>,
  extras: ProfileExtras,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsoleProfileRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const definitions = [...tenant.personFields.fields].filter((field) => field.selectable);
  const fields = [
    ...definitions.map((field) => field.id),
    TAGS_FIELD,
    CREATED_FIELD,
    LAST_SEEN_FIELD,
  ];
  const found = await getPeopleByIds({ contact_ids: [request.person_id], fields }, tenant, people);
  const person = found.contacts[request.person_id];
  if (!person) {
    throw new NotFoundError(`person_id: no person ${request.person_id} in this instance`, [
      { field: 'person_id', error: 'not found' },
    ]);
  }
  const values = (person.fields ?? {}) as Record<string, unknown>;
  const labels = new Map(definitions.map((field) => [field.id, field.label]));
  const instanceId = tenant.instance.id;
  const [timeline, emails, memberships, names] = await Promise.all([
    feed(tenant.instance).then((ports) =>
      getPersonActivities(
        PersonActivitiesRequest.parse({ person_id: request.person_id, limit: 50 }),
        instanceId,
        ports,
      ),
    ),
    extras.emails.ofPerson(instanceId, request.person_id, { limit: PROFILE_EMAILS }),
    extras.membershipsOf(instanceId, request.person_id),
    extras.audienceNames(instanceId),
  ]);
  return {
    instance_id: tenant.instance.id,
    person_id: request.person_id,
    fields: Object.entries(values)
      .filter(([id]) => labels.has(id))
      .map(([id, value]) => ({ id, label: labels.get(id) ?? id, value })),
    tags: (values[TAGS_FIELD] as string[] | undefined) ?? [],
    created: (values[CREATED_FIELD] as string | undefined) ?? null,
    last_seen: (values[LAST_SEEN_FIELD] as string | undefined) ?? null,
    organization_id: (values[ORGANIZATION_FIELD] as string | undefined) ?? null,
    activities: timeline.activities.map((activity) => ({
      id: activity.id,
      activity_id: activity.field_id,
      // Its display text, else what the real API's feed renders for it (built-in activities).
      display:
        activity.display ??
        (activity.render_cmds.map((command) => command.content).join('') || activity.field_id),
      created_at: activity.created_at,
    })),
    emails: emails.records.map(emailSummary),
    // Members only (one who left keeps a record, not a membership); an audience deleted
    // meanwhile is left out.
    audiences: [...memberships.values()]
      .filter((membership) => membership.member && names.has(membership.audience_id))
      .map((membership) => ({
        audience_id: membership.audience_id,
        name: names.get(membership.audience_id) ?? membership.audience_id,
        member_from: membership.member_from ?? null,
        subscribed: membership.subscribed,
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}
