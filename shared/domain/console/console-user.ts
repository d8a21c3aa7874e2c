import { z } from 'zod';

/**
 * Who signed in to the console, from the claims of the ID token their identity provider
 * issued (Amazon Cognito on AWS, the local issuer under `npm start`): the groups they belong
 * to name what they may see. `platform-admin` sees every instance of the region;
 * `instance:<id>` one instance. A user in no such group signs in and sees nothing.
 */
export const PLATFORM_ADMIN_GROUP = 'platform-admin';
export const INSTANCE_GROUP_PREFIX = 'instance:';
/** The claim that lists a user's groups: Cognito's name, which the local issuer also uses. */
export const GROUPS_CLAIM = 'cognito:groups';

export interface ConsoleUser {
  /** The token's `sub`: the user's stable ID at the identity provider. */
  readonly subject: string;
  readonly email: string | undefined;
  readonly platformAdmin: boolean;
  /** The instances named by the user's groups (every instance when `platformAdmin`). */
  readonly instances: ReadonlySet<string>;
}

const Claims = z.object({
  sub: z.string().min(1),
  email: z.string().optional(),
  // Cognito's ID tokens say `token_use: "id"`; an access token is not a console credential.
  token_use: z.literal('id').optional(),
  [GROUPS_CLAIM]: z.array(z.string()).optional(),
});

/** The user an ID token's verified claims describe; throws on claims that are not one. */
export function consoleUserOf(claims: Record<string, unknown>): ConsoleUser {
  const parsed = Claims.parse(claims);
  const groups = parsed[GROUPS_CLAIM] ?? [];
  return {
    subject: parsed.sub,
    email: parsed.email,
    platformAdmin: groups.includes(PLATFORM_ADMIN_GROUP),
    instances: new Set(
      groups
        .filter((group) => group.startsWith(INSTANCE_GROUP_PREFIX))
        .map((group) => group.slice(INSTANCE_GROUP_PREFIX.length))
        .filter((id) => id.length > 0),
    ),
  };
}

/** Whether the user may see and manage an instance. */
export function mayManage(user: ConsoleUser, instanceId: string): boolean {
  return user.platformAdmin || user.instances.has(instanceId);
}

/** The group that gives a user an instance (what an operator adds them to). */
export function instanceGroup(instanceId: string): string {
  return `${INSTANCE_GROUP_PREFIX}${instanceId}`;
}
