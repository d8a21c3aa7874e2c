import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoOffsetCheckpoints } from '../adapters/offset-checkpoints.js';
import { ApiEnv, readEnv } from '../config/env.js';
import type { CursorCodec } from '../domain/cursor.js';
import type { ActivityFeedPorts, ActivityReader } from '../domain/people/person-activities.js';
import type { InstanceSchema } from '../domain/tenancy.js';

/**
 * What a person's or an account's activity feed reads besides its timeline: kept positions
 * for `offset` paging, the instance's time zone and its definitions' names.
 */
export function createFeedPorts(db: DynamoDBDocumentClient) {
  const requests = readEnv(ApiEnv).REQUESTS_TABLE;
  const checkpoints = requests ? new DynamoOffsetCheckpoints(db, requests) : undefined;
  return (
    instance: InstanceSchema,
    reader: ActivityReader,
    cursors: CursorCodec,
  ): ActivityFeedPorts => {
    const names = new Map(
      instance.activities.map((definition) => [definition.id, definition.name]),
    );
    return {
      reader,
      cursors,
      ...(checkpoints ? { checkpoints } : {}),
      ...(instance.timezone ? { timeZone: instance.timezone } : {}),
      definitionName: (fieldId) => names.get(fieldId),
    };
  };
}
