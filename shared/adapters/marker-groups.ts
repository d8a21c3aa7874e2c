import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { MergeOutcome, RecordMarker } from '../domain/merge/merge-engine.js';
import { slicesOf } from '../lib/bounded.js';
import { batchWrite } from './dynamo-helpers.js';
import { markerGroupItem, requestPk } from './request-store.js';

interface Waiting {
  instanceId: string;
  marker: RecordMarker;
  settle: (error?: Error) => void;
}

/**
 * The markers of records put after their transactions (new people with key claims: the
 * person's `origin_*` stands for its marker until then), made at about the same moment (the
 * same turn of the event loop: the records of a shared transaction, as it commits), go to
 * DynamoDB together: the moment's markers of one request as one item (`R#G#…`, the outcomes
 * by record index), the moment's requests' items 25 a call. An item per record cost the
 * store a write per new person (its CPU locally, a write unit each on AWS); a group of a
 * hundred outcomes is a few KB. Each caller's promise settles with the call that carried its
 * marker, so a caller knows its marker is written when its put resolves.
 */
export class MarkerGroups {
  private waiting: Waiting[] = [];

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  put(instanceId: string, marker: RecordMarker): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(() => void this.flush());
      this.waiting.push({
        instanceId,
        marker,
        settle: (error) => {
          if (error === undefined) resolve();
          else reject(error);
        },
      });
    });
  }

  private async flush() {
    const taken = this.waiting;
    this.waiting = [];
    const groups = new Map<string, Waiting[]>();
    for (const waiting of taken) {
      const pk = requestPk(waiting.instanceId, waiting.marker.requestId);
      const group = groups.get(pk);
      if (group) group.push(waiting);
      else groups.set(pk, [waiting]);
    }
    await Promise.all(
      slicesOf([...groups.values()], 25).map(async (slice) => {
        const settle = (error?: Error) => {
          for (const group of slice) for (const waiting of group) waiting.settle(error);
        };
        try {
          await batchWrite(
            this.db,
            this.table,
            slice.map((group) => {
              const { instanceId, marker } = group[0] as Waiting;
              const outcomes = new Map<number, MergeOutcome>(
                group.map((waiting) => [waiting.marker.index, waiting.marker.outcome]),
              );
              return {
                PutRequest: { Item: markerGroupItem(instanceId, marker.requestId, outcomes) },
              };
            }),
          );
          settle();
        } catch (error) {
          settle(error instanceof Error ? error : new Error(String(error)));
        }
      }),
    );
  }
}
