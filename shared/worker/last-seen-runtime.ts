import { createDocumentClient } from '../adapters/aws-clients.js';
import { DynamoLastSeenStore } from '../adapters/last-seen-store.js';
import { latestTouch, type LastSeenStore } from '../domain/activities/last-seen.js';
import { LastSeenWorkerEnv, readEnv } from '../config/env.js';
import { streamWorker, type StreamChange } from './stream-worker.js';

/** `<inst>#P#<person>` → its instance and person. */
function personOf(pk: unknown): { instanceId: string; personId: string } | undefined {
  const match = typeof pk === 'string' ? /^(.+)#P#([0-9a-f]{24})$/.exec(pk) : null;
  return match ? { instanceId: match[1] ?? '', personId: match[2] ?? '' } : undefined;
}

/** A new activity that tracks a touch (the event filter lets only these through on AWS). */
function isTouch(change: StreamChange): boolean {
  return change.eventName === 'INSERT' && change.newImage?.touch === true;
}

/**
 * The last-seen worker: fed by the activities table's stream, it moves each person's last
 * seen to the latest touch among their new activities of the batch (one conditional update
 * per person and batch; last-seen.ts says why it never goes back).
 */
export function lastSeenWorker(store: LastSeenStore) {
  return streamWorker({
    subjectOf: (change) =>
      isTouch(change) && personOf(change.keys.pk) ? String(change.keys.pk) : undefined,
    process: async (subject, changes) => {
      const person = personOf(subject);
      const touch = latestTouch(changes.map((change) => change.newImage));
      if (!person || !touch) return;
      await store.touch(person.instanceId, person.personId, touch.at, touch.place);
    },
    // Each subject is one small update: more of them in flight than the default.
    concurrency: 16,
  });
}

export function createLastSeenWorker() {
  const env = readEnv(LastSeenWorkerEnv);
  return lastSeenWorker(
    new DynamoLastSeenStore(createDocumentClient(), { people: env.PEOPLE_TABLE }),
  );
}
