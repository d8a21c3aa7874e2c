import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { MergeOutcome, RecordMarker } from '../domain/merge/merge-engine.js';
import { slicesOf } from '../lib/bounded.js';
import { batchWrite } from './dynamo-helpers.js';
import { markerGroupItem, requestPk } from './request-store.js';

interface Released {
  instanceId: string;
  requestId: string;
  markers: RecordMarker[];
  settle: (error?: Error) => void;
}

/**
 * The markers of records put after their transactions (new people with key claims: the
 * person's `origin_*` stands for its marker until then), held until their request's merge is
 * over and then put as one item (`R#G#…`, the outcomes by record index); the requests
 * released at about the same moment (the same turn of the event loop) go 25 items a call.
 * An item per record cost the store a write per new person, and an item per transaction a
 * call per hundred items written (as many calls as the transactions themselves); a request's
 * hundred outcomes are a few KB. Each release settles with the call that carried its item,
 * so a caller knows its request's markers are written when its release resolves.
 */
export class MarkerGroups {
  private readonly held = new Map<string, { instanceId: string; markers: RecordMarker[] }>();
  /** Each request's put in flight (a duplicate delivery here may have released its markers). */
  private readonly writing = new Map<string, Promise<void>>();
  private released: Released[] = [];

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** Keeps a written record's marker until its request is released. */
  hold(instanceId: string, marker: RecordMarker): void {
    const pk = requestPk(instanceId, marker.requestId);
    const request = this.held.get(pk);
    if (request) request.markers.push(marker);
    else this.held.set(pk, { instanceId, markers: [marker] });
  }

  /**
   * Puts the request's held markers. With none held, it settles with the request's put in
   * flight, if any (a duplicate delivery in this container that released them first), else
   * at once.
   */
  release(instanceId: string, requestId: string): Promise<void> {
    const pk = requestPk(instanceId, requestId);
    const request = this.held.get(pk);
    this.held.delete(pk);
    if (!request) return this.writing.get(pk) ?? Promise.resolve();
    const written = new Promise<void>((resolve, reject) => {
      if (this.released.length === 0) setImmediate(() => void this.flush());
      this.released.push({
        instanceId,
        requestId,
        markers: request.markers,
        settle: (error) => {
          if (error === undefined) resolve();
          else reject(error);
        },
      });
    });
    this.writing.set(pk, written);
    const settled = () => {
      if (this.writing.get(pk) === written) this.writing.delete(pk);
    };
    written.then(settled, settled);
    return written;
  }

  private async flush() {
    const taken = this.released;
    this.released = [];
    await Promise.all(
      slicesOf(taken, 25).map(async (slice) => {
        const settle = (error?: Error) => {
          for (const released of slice) released.settle(error);
        };
        try {
          await batchWrite(
            this.db,
            this.table,
            slice.map(({ instanceId, requestId, markers }) => {
              const outcomes = new Map<number, MergeOutcome>(
                markers.map((marker) => [marker.index, marker.outcome]),
              );
              return {
                PutRequest: { Item: markerGroupItem(instanceId, requestId, outcomes) },
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
