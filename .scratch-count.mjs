import { DynamoDBClient, ListTablesCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
const c = new DynamoDBClient({ endpoint: 'http://127.0.0.1:9700', region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
const { TableNames } = await c.send(new ListTablesCommand({}));
for (const t of TableNames.filter((n) => n.startsWith('cdp-default'))) {
  const d = await c.send(new DescribeTableCommand({ TableName: t }));
  console.log(t, d.Table.ItemCount);
}
