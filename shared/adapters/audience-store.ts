import { randomInt } from 'node:crypto';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import {
  MAX_AUDIENCES,
  type Audience,
  type AudienceCounters,
  type AudienceStore,
} from '../domain/audiences/audience.js';
import { ConflictError, ValidationError } from '../domain/errors.js';
import {
  batchWrite,
  cancellationCodes,
  conditionally,
  queryPartition,
  type Item,
} from './dynamo-helpers.js';

/**
 * Audience definitions, in the config table beside the instance's configuration but in a
 * partition of their own (`INST#<id>#AUD`, which `admin apply` does not rewrite):
 * - `A#<audience>`: the definition (`audience`);
 * - `N#<lower-cased name>`: the name's claim (names are unique per instance, without case);
 * - `COUNT`: how many audiences the instance has (at most `MAX_AUDIENCES`), and `version`, added
 *   to by every create, update and removal in its transaction (the audience worker reads it for
 *   each batch and compiles the definitions again only when it moved).
 * A create is one transaction of the three; a rename moves the claim in the update's.
 *
 * Their counters are in the audiences table (docs/data-model.md): `<inst>#AC#<audience>` /
 * `C#<0..15>` (members, subscribers, SMS opt-ins, people of a build evaluated) and
 * `D#<day>#<0..3>` (entries of a day, expiring after 32 days).
 */
const audiencesPk = (instanceId: string) => `INST#${instanceId}#AUD`;
const nameSk = (name: string) => `N#${name.toLowerCase()}`;
export const countersPk = (instanceId: string, audienceId: string) =>
  `${instanceId}#AC#${audienceId}`;

/** Counter shards of an audience, and shards of its daily entry counts. */
export const AUDIENCE_COUNTER_SHARDS = 16;
export const DAILY_ENTRY_SHARDS = 4;

/** The counter attribute of a build's evaluated people (`evaluated_<version>`). */
export const evaluatedAttribute = (version: number) => `evaluated_${version}`;

const DAY_MS = 86_400_000;

const StoredAudience = z.object({
  id: z.string(),
  name: z.string(),
  filter: z.unknown(),
  exit_filter: z.unknown().optional(),
  is_public: z.boolean(),
  public_name: z.string(),
  public_description: z.string(),
  sms_is_public: z.boolean(),
  sms_public_name: z.string(),
  sms_public_description: z.string(),
  created: z.string(),
  edited_at: z.string(),
  archived_at: z.string().optional(),
  version: z.number(),
  build: z.object({
    version: z.number(),
    started_at: z.string(),
    cursors: z.record(z.string(), z.string()),
    queued: z.number(),
    decided: z.number().optional(),
    finished_at: z.string().optional(),
  }),
});

function audienceOf(item: Item): Audience {
  const { exit_filter, archived_at, build, ...rest } = StoredAudience.parse(item.audience);
  return {
    ...rest,
    ...(exit_filter === undefined || exit_filter === null ? {} : { exit_filter }),
    ...(archived_at ? { archived_at } : {}),
    build: {
      version: build.version,
      started_at: build.started_at,
      cursors: build.cursors,
      queued: build.queued,
      ...(build.decided ? { decided: build.decided } : {}),
      ...(build.finished_at ? { finished_at: build.finished_at } : {}),
    },
  };
}

/**
 * An update of an audience's definition, attribute by attribute. Its build is left as the
 * build's pages keep moving it (cursors, counts, the end) unless the update starts a new one:
 * a rename during a build must not take the build back to where it was when the rename read it.
 */
function definitionUpdate(audience: Audience, previous: Audience) {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':seen': previous.edited_at };
  const set: string[] = [];
  const remove: string[] = [];
  const keys = new Set([...Object.keys(previous), ...Object.keys(audience)]);
  keys.delete('id');
  if (audience.build.version === previous.build.version) keys.delete('build');
  for (const [i, key] of [...keys].entries()) {
    names[`#a${i}`] = key;
    const value = (audience as unknown as Record<string, unknown>)[key];
    if (value === undefined) remove.push(`audience.#a${i}`);
    else {
      values[`:a${i}`] = value;
      set.push(`audience.#a${i} = :a${i}`);
    }
  }
  return {
    UpdateExpression: `SET ${set.join(', ')}${remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : ''}`,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

export class DynamoAudienceStore implements AudienceStore {
  constructor(
    protected readonly db: DynamoDBDocumentClient,
    protected readonly tables: { config: string; audiences: string },
  ) {}

  async list(instanceId: string): Promise<Audience[]> {
    const audiences: Audience[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.tables.config,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :a)',
          ExpressionAttributeValues: { ':pk': audiencesPk(instanceId), ':a': 'A#' },
          ConsistentRead: true,
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) audiences.push(audienceOf(item));
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return audiences;
  }

  /**
   * How many audiences the instance has and the version of their definitions (both 0 before
   * its first audience), read consistently: one small item.
   */
  async catalog(instanceId: string): Promise<{ audiences: number; version: number }> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tables.config,
        Key: { pk: audiencesPk(instanceId), sk: 'COUNT' },
        ConsistentRead: true,
      }),
    );
    return { audiences: Number(Item?.audiences ?? 0), version: Number(Item?.version ?? 0) };
  }

  async get(instanceId: string, audienceId: string): Promise<Audience | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tables.config,
        Key: { pk: audiencesPk(instanceId), sk: `A#${audienceId}` },
        ConsistentRead: true,
      }),
    );
    return Item ? audienceOf(Item) : undefined;
  }

  async create(instanceId: string, audience: Audience): Promise<void> {
    const pk = audiencesPk(instanceId);
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.tables.config,
                Item: { pk, sk: `A#${audience.id}`, audience },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            {
              Put: {
                TableName: this.tables.config,
                Item: { pk, sk: nameSk(audience.name), audience_id: audience.id },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            {
              Update: {
                TableName: this.tables.config,
                Key: { pk, sk: 'COUNT' },
                UpdateExpression: 'ADD audiences :one, version :one',
                ConditionExpression: 'attribute_not_exists(audiences) OR audiences < :max',
                ExpressionAttributeValues: { ':one': 1, ':max': MAX_AUDIENCES },
              },
            },
          ],
        }),
      );
    } catch (error) {
      const codes = cancellationCodes(error);
      if (codes?.[1] === 'ConditionalCheckFailed') throw nameTaken(audience.name);
      if (codes?.[2] === 'ConditionalCheckFailed') {
        throw new ValidationError(`name: the instance has ${MAX_AUDIENCES} audiences already`, [
          { field: 'name', error: `at most ${MAX_AUDIENCES} audiences per instance` },
        ]);
      }
      throw error;
    }
  }

  async update(instanceId: string, audience: Audience, previous: Audience): Promise<void> {
    const pk = audiencesPk(instanceId);
    const renamed = nameSk(audience.name) !== nameSk(previous.name);
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tables.config,
                Key: { pk, sk: `A#${audience.id}` },
                ...definitionUpdate(audience, previous),
                // Changes made from a read that another change has overtaken are refused.
                ConditionExpression: 'audience.edited_at = :seen',
              },
            },
            ...(renamed
              ? [
                  {
                    Put: {
                      TableName: this.tables.config,
                      Item: { pk, sk: nameSk(audience.name), audience_id: audience.id },
                      ConditionExpression: 'attribute_not_exists(pk)',
                    },
                  },
                  {
                    Delete: {
                      TableName: this.tables.config,
                      Key: { pk, sk: nameSk(previous.name) },
                    },
                  },
                ]
              : []),
            {
              Update: {
                TableName: this.tables.config,
                Key: { pk, sk: 'COUNT' },
                UpdateExpression: 'ADD version :one',
                ExpressionAttributeValues: { ':one': 1 },
              },
            },
          ],
        }),
      );
    } catch (error) {
      const codes = cancellationCodes(error);
      if (codes?.[1] === 'ConditionalCheckFailed') throw nameTaken(audience.name);
      if (codes?.[0] === 'ConditionalCheckFailed') {
        throw new ConflictError(
          'audience_id: the audience was changed by another request meanwhile; read it and try again',
          [{ field: 'audience_id', error: 'changed meanwhile' }],
        );
      }
      throw error;
    }
  }

  async markTimed(instanceId: string): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tables.config,
        Item: { pk: 'DEPLOYMENT', sk: `TIMED#${instanceId}` },
      }),
    );
  }

  async remove(instanceId: string, audience: Audience): Promise<void> {
    const pk = audiencesPk(instanceId);
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.tables.config,
                Key: { pk, sk: `A#${audience.id}` },
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            { Delete: { TableName: this.tables.config, Key: { pk, sk: nameSk(audience.name) } } },
            {
              Update: {
                TableName: this.tables.config,
                Key: { pk, sk: 'COUNT' },
                UpdateExpression: 'ADD audiences :less, version :one',
                ExpressionAttributeValues: { ':less': -1, ':one': 1 },
              },
            },
          ],
        }),
      );
    } catch (error) {
      // Deleted by another request meanwhile: the same outcome.
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return;
      throw error;
    }
  }

  /**
   * Each audience's counters: one query of its counter partition (16 total shards, at most
   * 32 days of entry shards), eventually consistent (a count a moment old is fine here), and
   * how many people of its current build were evaluated.
   */
  async counters(
    instanceId: string,
    audiences: readonly Pick<Audience, 'id' | 'build'>[],
    now: number,
  ): Promise<Map<string, AudienceCounters>> {
    const since = dayOf(now - 30 * DAY_MS);
    const entries = await Promise.all(
      audiences.map(async ({ id, build }) => {
        const evaluated = evaluatedAttribute(build.version);
        const totals: AudienceCounters = {
          members: 0,
          subscribers: 0,
          sms_opted_in: 0,
          added_last_30_days: 0,
          evaluated: 0,
        };
        const items = await queryPartition(
          this.db,
          this.tables.audiences,
          countersPk(instanceId, id),
        );
        for (const item of items) {
          const sk = String(item.sk);
          if (sk.startsWith('D#')) {
            if (sk.slice(2, 12) >= since) totals.added_last_30_days += numberOf(item.entered);
            continue;
          }
          totals.members += numberOf(item.members);
          totals.subscribers += numberOf(item.subscribers);
          totals.sms_opted_in += numberOf(item.sms_opted_in);
          totals.evaluated += numberOf(item[evaluated]);
        }
        return [id, totals] as const;
      }),
    );
    return new Map(entries);
  }
}

/** The build side of the audience jobs (`jobs.ts`). */
export class DynamoAudienceBuilds extends DynamoAudienceStore {
  async advanceBuild(
    instanceId: string,
    audience: Audience,
    shard: number,
    from: string,
    to: string,
    queued: number,
    decided: number,
  ): Promise<boolean> {
    return conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.tables.config,
        Key: { pk: audiencesPk(instanceId), sk: `A#${audience.id}` },
        UpdateExpression:
          'SET audience.build.queued = audience.build.queued + :n, audience.build.cursors.#s = :to, ' +
          'audience.build.decided = if_not_exists(audience.build.decided, :zero) + :d',
        ConditionExpression: 'audience.build.version = :v AND audience.build.cursors.#s = :from',
        ExpressionAttributeNames: { '#s': String(shard) },
        ExpressionAttributeValues: {
          ':n': queued,
          ':d': decided,
          ':zero': 0,
          ':to': to,
          ':from': from,
          ':v': audience.build.version,
        },
      }),
    );
  }

  async finishBuild(instanceId: string, audience: Audience, at: string): Promise<void> {
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.tables.config,
        Key: { pk: audiencesPk(instanceId), sk: `A#${audience.id}` },
        UpdateExpression: 'SET audience.build.finished_at = :at',
        ConditionExpression:
          'audience.build.version = :v AND attribute_not_exists(audience.build.finished_at)',
        ExpressionAttributeValues: { ':at': at, ':v': audience.build.version },
      }),
    );
  }

  async removeCounters(instanceId: string, audienceId: string): Promise<void> {
    const keys: { pk: string; sk: string }[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.tables.audiences,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': countersPk(instanceId, audienceId) },
          ProjectionExpression: 'pk, sk',
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) keys.push({ pk: String(item.pk), sk: String(item.sk) });
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    await batchWrite(
      this.db,
      this.tables.audiences,
      keys.map((Key) => ({ DeleteRequest: { Key } })),
    );
  }

  async timedInstances(): Promise<string[]> {
    const instances: string[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.tables.config,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :timed)',
          ExpressionAttributeValues: { ':pk': 'DEPLOYMENT', ':timed': 'TIMED#' },
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) instances.push(String(item.sk).slice('TIMED#'.length));
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return instances;
  }
}

const numberOf = (value: unknown) => (typeof value === 'number' ? value : 0);

/** The UTC day of an instant, `YYYY-MM-DD`. */
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function nameTaken(name: string): ConflictError {
  return new ConflictError(`name: the instance has an audience named "${name}" already`, [
    { field: 'name', error: 'an audience of this name exists' },
  ]);
}

/** A counter shard for one write (writes spread over the shards: no hot item). */
export const counterShard = () => `C#${randomInt(AUDIENCE_COUNTER_SHARDS)}`;
export const entryShard = (day: string) => `D#${day}#${randomInt(DAILY_ENTRY_SHARDS)}`;
