import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoFieldIndex } from '../adapters/field-index-store.js';
import { DynamoOffsetCheckpoints } from '../adapters/offset-checkpoints.js';
import { ApiEnv, FieldIndexEnv, readEnv } from '../config/env.js';
import type { ListingPorts } from '../domain/people/person-get.js';
import { createAudienceServices } from '../worker/audience-runtime.js';
import { createPeopleStore } from './api-runtime.js';

/** What `person/get` reads: people, the field index, audiences' members, offset positions. */
export function createListingPorts(db: DynamoDBDocumentClient): ListingPorts {
  const { store: audienceStore, memberships } = createAudienceServices(db);
  const requests = readEnv(ApiEnv).REQUESTS_TABLE;
  return {
    listing: createPeopleStore(db),
    fields: new DynamoFieldIndex(db, readEnv(FieldIndexEnv).INDEXES_TABLE),
    audiences: {
      size: async (instanceId, audienceId) => {
        const audience = await audienceStore.get(instanceId, audienceId);
        if (!audience) return undefined;
        const counters = await audienceStore.counters(instanceId, [audience], Date.now());
        return counters.get(audienceId)?.members ?? 0;
      },
      membersPage: async (...args) => {
        const page = await memberships.membersPage(...args);
        return { keys: page.keys, hasMore: page.hasMore };
      },
    },
    ...(requests ? { checkpoints: new DynamoOffsetCheckpoints(db, requests) } : {}),
  };
}
