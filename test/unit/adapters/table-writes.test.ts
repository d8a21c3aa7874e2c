import { describe, expect, it } from '@jest/globals';
import { Readable } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  onTableWrites,
  reportTableWrites,
  tablesWritten,
} from '../../../shared/adapters/table-writes.js';

/**
 * The writes a process's DynamoDB clients make, told by table to whoever listens (the local
 * stack's stream pollers): only writes that succeeded, each with the tables it changed.
 */
function clientAnswering(status: number): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
    requestHandler: {
      handle: () =>
        Promise.resolve({
          response: {
            statusCode: status,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body: Readable.from([
              status === 200 ? '{}' : '{"__type":"ValidationException","message":"no"}',
            ]),
          },
        }),
    },
  });
  return DynamoDBDocumentClient.from(reportTableWrites(client));
}

describe('table writes', () => {
  it('names the tables each write command changes, and none for reads or condition checks', () => {
    expect(tablesWritten('PutItemCommand', { TableName: 'people' })).toEqual(new Set(['people']));
    expect(tablesWritten('UpdateItem', { TableName: 'people' })).toEqual(new Set(['people']));
    expect(tablesWritten('DeleteItemCommand', { TableName: 'emails' })).toEqual(
      new Set(['emails']),
    );
    expect(
      tablesWritten('BatchWriteItemCommand', { RequestItems: { people: [], activities: [] } }),
    ).toEqual(new Set(['people', 'activities']));
    expect(
      tablesWritten('TransactWriteItemsCommand', {
        TransactItems: [
          { Put: { TableName: 'people' } },
          { Update: { TableName: 'audiences' } },
          { Delete: { TableName: 'people' } },
          { ConditionCheck: { TableName: 'config' } },
        ],
      }),
    ).toEqual(new Set(['people', 'audiences']));
    expect(tablesWritten('GetItemCommand', { TableName: 'people' })).toEqual(new Set());
    expect(tablesWritten('QueryCommand', { TableName: 'people' })).toEqual(new Set());
  });

  it('tells the listeners of each successful write of a client, the document client’s too', async () => {
    const heard: string[][] = [];
    const stop = onTableWrites((tables) => heard.push([...tables].sort()));
    try {
      const documents = clientAnswering(200);
      await documents.send(new PutCommand({ TableName: 'people', Item: { pk: 'a', sk: 'P' } }));
      await documents.send(new GetCommand({ TableName: 'people', Key: { pk: 'a', sk: 'P' } }));
      await documents.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: 'people', Item: { pk: 'b', sk: 'P' } } },
            { Put: { TableName: 'activities', Item: { pk: 'b', sk: 'A' } } },
          ],
        }),
      );
      expect(heard).toEqual([['people'], ['activities', 'people']]);
    } finally {
      stop();
    }
  });

  it('says nothing of a refused write, nor to a listener that stopped', async () => {
    const heard: string[][] = [];
    const stop = onTableWrites((tables) => heard.push([...tables]));
    const refused = clientAnswering(400);
    await expect(
      refused.send(new PutCommand({ TableName: 'people', Item: { pk: 'a', sk: 'P' } })),
    ).rejects.toThrow('no');
    stop();
    await clientAnswering(200).send(
      new PutCommand({ TableName: 'people', Item: { pk: 'a', sk: 'P' } }),
    );
    expect(heard).toEqual([]);
  });
});
