import { z } from 'zod';
import { LifecycleRequest, type LifecycleAction } from '../../domain/lifecycle/lifecycle.js';

/**
 * What the areas of the endpoints table (`../endpoints.ts`) share: the shape of an entry, the
 * IDs of the examples, and the helpers of more than one area (archive, restore and delete;
 * HTML answers).
 */

export type Tag =
  | 'People'
  | 'Organizations'
  | 'Activities'
  | 'Asynchronous requests'
  | 'Transactional email'
  | 'Email links'
  | 'Accounts'
  | 'Instance'
  | 'Audiences'
  | 'Webhooks'
  | 'Service'
  | 'Console';

export interface Answer {
  description: string;
  /** The JSON body's schema; absent for answers that are not JSON (`content`). */
  schema?: z.ZodType;
  example?: unknown;
  /** A body of another media type (HTML pages, images, scripts). */
  content?: { type: string; description: string };
  /** Response headers beyond `X-Request-Id` (documented in `document.ts`). */
  headers?: readonly ('Location' | 'Cache-Control' | 'X-Next-Cursor')[];
}

export interface Endpoint {
  tag: Tag;
  summary: string;
  description: string;
  /** The JSON request body, as its handler (or domain) validates it. */
  request?: z.ZodType;
  requestExample?: unknown;
  /** The successful answers by status. */
  responses: Readonly<Partial<Record<200 | 202 | 302, Answer>>>;
  /** Error statuses of this route beyond those every route of its kind has. */
  errors?: readonly number[];
  /** Query parameters (the public links). */
  query?: z.ZodObject;
}

export const ids = {
  person: '66a1f0c2e4b0a1b2c3d4e5f6',
  person2: '66a1f0c2e4b0a1b2c3d4e5f7',
  organization: '66a1f0c3e4b0a1b2c3d4e600',
  activity: '66a1f0c4e4b0a1b2c3d4e611',
  request: '66a1f0c5e4b0a1b2c3d4e622',
  message: '66a1f0c6e4b0a1b2c3d4e633',
};

export const cursor = 'eyJ2IjozLCJtb2RlIjoiaW5kZXgifQ.c2lnbmF0dXJl';

/** One or the other, as `LifecycleRequest`'s refinement says (both, or neither, is a 400). */
const LifecycleBody = z
  .xor([
    z
      .object({ inclusion_ids: LifecycleRequest.shape.inclusion_ids.unwrap() })
      .meta({ title: 'Named records', description: '1 to 100 IDs, changed before the answer' }),
    z
      .object({
        all_rows_selected: z.literal(true),
        exclusion_ids: LifecycleRequest.shape.exclusion_ids,
      })
      .meta({
        title: 'Every record',
        description: 'Every record but `exclusion_ids` (up to 1000): a background request',
      }),
  ])
  .meta({ id: 'LifecycleRequest' });

/** What archive, restore and delete do, by action and by the names the route uses. */
const LIFECYCLE_TEXT: Record<
  LifecycleAction,
  (names: { plural: string; singular: string }) => { summary: string; description: string }
> = {
  archive: ({ plural }) => ({
    summary: `Archive ${plural}`,
    description:
      plural === 'people'
        ? 'Archived people leave listings, searches, counters and their organization’s member count, are not emailed, and keep their merge keys: a merge, an activity or a send that finds one is refused for that record (`invalid`), never creates a second person. Restore brings them back.'
        : `Archived ${plural} leave listings, name searches and \`total_organizations\`, keep their key claims (a merge that finds one is \`invalid\`) and their people. Restore brings them back.`,
  }),
  restore: ({ plural }) => ({
    summary: `Restore archived ${plural}`,
    description: `Puts archived ${plural} back into listings, searches and counters.`,
  }),
  delete: ({ plural, singular }) => ({
    summary: `Delete archived ${plural} (erasure)`,
    description:
      plural === 'people'
        ? 'Erases archived people (only archived ones: any other is a 400 naming it, and nothing is deleted) and everything that names them: fields, tags, key claims, memberships, activities, kept `Idempotency-Key` answers, asynchronous requests and sent-email records. Kept: the hashed suppression of an address that bounced or complained, and an audit entry without personal data. The body is JSON, as with every call.'
        : `Deletes archived ${plural} that have no people (one that still has people is a 400 naming it): the ${singular}, its key claims and its count; an audit entry without personal data is kept. The body is JSON, as with every call.`,
  }),
};

const VERB = { archive: 'archived', restore: 'restored', delete: 'deleted' } as const;

/** The entry of an archive, restore or delete route. */
export function lifecycle(
  tag: Tag,
  names: 'people' | 'organizations' | 'accounts',
  action: LifecycleAction,
  schema: z.ZodType,
): Endpoint {
  const singular = { people: 'person', organizations: 'organization', accounts: 'account' }[names];
  const text = LIFECYCLE_TEXT[action]({ plural: names, singular });
  // As recorded: the accounts delete answers the accounts names, archive and restore not.
  const noun =
    names === 'people'
      ? 'contacts'
      : names === 'accounts' && action === 'delete'
        ? 'accounts'
        : 'organizations';
  const accounts =
    names === 'accounts'
      ? ` The organizations endpoint under the accounts names (the same operation${noun === 'accounts' ? '; its answer says `scheduled_accounts` and `deleted_accounts`, as the real API’s does' : ' and answer, as the real API’s'}).`
      : '';
  return {
    tag,
    summary: text.summary,
    description: `${text.description} With \`inclusion_ids\` the records are changed before the answer: every ID is checked first (an unknown one, or one of another instance, is a 400 naming it, and nothing changes), records already so are left alone and not counted, and \`scheduled_${noun}\` is 0. With \`all_rows_selected\` the request runs in the background: the answer comes at once with \`scheduled_${noun}\` (how many it is about to change) and a \`request_id\`, and \`POST /v1/async/get\` shows its \`progress\`, then its \`result\` (this answer).${accounts}`,
    request: LifecycleBody,
    requestExample: { inclusion_ids: [names === 'people' ? ids.person : ids.organization] },
    responses: {
      200: {
        description: `How many were ${VERB[action]} (or scheduled, in the background)`,
        schema,
        example: { [`scheduled_${noun}`]: 0, [`${VERB[action]}_${noun}`]: 1 },
      },
    },
  };
}

export const html = (description: string): Answer => ({
  description,
  content: { type: 'text/html', description },
  headers: ['Cache-Control'],
});
