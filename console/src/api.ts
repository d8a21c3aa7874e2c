import { useQueryClient } from '@tanstack/react-query';
import { useAuth } from 'react-oidc-context';
import type { z } from 'zod';
import type {
  ConsoleActivitiesResponse,
  ConsoleAuditResponse,
  ConsoleInstancesResponse,
  ConsoleKeyCreatedResponse,
  ConsoleKeyRevokedResponse,
  ConsoleKeysResponse,
  ConsoleMeResponse,
  ConsolePeopleResponse,
  ConsoleProfileResponse,
} from '../../shared/api/console-schemas.ts';
import type {
  ConsoleAudienceMembersResponse,
  ConsoleAudienceResponse,
  ConsoleAudiencesResponse,
  ConsoleOrganizationProfileResponse,
  ConsoleOrganizationsResponse,
} from '../../shared/api/console-groups.ts';
import type {
  ConsoleFieldResponse,
  ConsoleFieldsResponse,
  ConsoleOverviewResponse,
} from '../../shared/api/console-overview.ts';
import type {
  ConsoleAttemptsResponse,
  ConsoleEmailPreviewResponse,
  ConsoleEmailsResponse,
  ConsoleReplayResponse,
  ConsoleSecretResponse,
  ConsoleWebhooksResponse,
} from '../../shared/api/console-messages.ts';

/** The console's API, typed from the schemas its functions answer with. */
export interface ConsoleConfig {
  issuer: string;
  client_id: string;
  region: string;
}

export type Me = z.infer<typeof ConsoleMeResponse>;
export type Instances = z.infer<typeof ConsoleInstancesResponse>;
export type Keys = z.infer<typeof ConsoleKeysResponse>;
export type KeyCreated = z.infer<typeof ConsoleKeyCreatedResponse>;
export type KeyRevoked = z.infer<typeof ConsoleKeyRevokedResponse>;
export type Audit = z.infer<typeof ConsoleAuditResponse>;
export type Activities = z.infer<typeof ConsoleActivitiesResponse>;
export type Activity = Activities['activities'][number];
export type People = z.infer<typeof ConsolePeopleResponse>;
export type Profile = z.infer<typeof ConsoleProfileResponse>;
export type Organizations = z.infer<typeof ConsoleOrganizationsResponse>;
export type OrganizationProfile = z.infer<typeof ConsoleOrganizationProfileResponse>;
export type Audiences = z.infer<typeof ConsoleAudiencesResponse>;
export type AudienceSummary = Audiences['audiences'][number];
export type FilterField = Audiences['filter_fields'][number];
export type AudienceAnswer = z.infer<typeof ConsoleAudienceResponse>;
export type AudienceMembers = z.infer<typeof ConsoleAudienceMembersResponse>;
export type Overview = z.infer<typeof ConsoleOverviewResponse>;
export type Fields = z.infer<typeof ConsoleFieldsResponse>;
export type CustomField = Fields['person']['fields'][number];
export type FieldChanged = z.infer<typeof ConsoleFieldResponse>;
export type Emails = z.infer<typeof ConsoleEmailsResponse>;
export type Email = Emails['emails'][number];
export type EmailPreview = z.infer<typeof ConsoleEmailPreviewResponse>;
export type Webhooks = z.infer<typeof ConsoleWebhooksResponse>;
export type WebhookListing = Webhooks['webhooks'][number];
export type Attempts = z.infer<typeof ConsoleAttemptsResponse>;
export type Replayed = z.infer<typeof ConsoleReplayResponse>;
export type SecretRotated = z.infer<typeof ConsoleSecretResponse>;

/** An answer other than 2xx: the API's error envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Calls a route of the console's API with the signed-in user's ID token. */
export function useConsoleApi() {
  const auth = useAuth();
  return async <T>(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`/console/v1/${path}`, {
      method,
      headers: {
        authorization: `Bearer ${auth.user?.id_token ?? ''}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer = (await response.json()) as T & { error?: string };
    if (!response.ok) throw new ApiError(response.status, answer.error ?? response.statusText);
    return answer;
  };
}

/**
 * After a change: refreshes the lists it changed (their query keys) and the instance's audit
 * log, which now records it.
 */
export function useRefreshAfterChange(instanceId: string) {
  const client = useQueryClient();
  return (...changed: readonly unknown[][]) =>
    Promise.all(
      [...changed, ['audit', instanceId]].map((queryKey) => client.invalidateQueries({ queryKey })),
    );
}
