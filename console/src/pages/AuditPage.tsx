import { Code, Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useConsoleApi, type Audit } from '../api.ts';
import { Failure, Waiting } from '../status.tsx';

/** What was changed through the console, newest first: who, what, when, from where. */
export function AuditPage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const audit = useQuery({
    queryKey: ['audit', instanceId],
    queryFn: () => api<Audit>('POST', 'audit/get', { instance_id: instanceId, limit: 100 }),
  });
  if (audit.isPending) return <Waiting what="Loading the audit log" />;
  if (audit.error) {
    return <Failure title="The audit log could not load" error={audit.error} />;
  }
  if (audit.data.entries.length === 0)
    return <Text>Nothing has been changed through the console yet.</Text>;
  return (
    <Table striped>
      <Table.Caption>The last {audit.data.entries.length} changes, newest first</Table.Caption>
      <Table.Thead>
        <Table.Tr>
          <Table.Th scope="col">When</Table.Th>
          <Table.Th scope="col">Who</Table.Th>
          <Table.Th scope="col">What</Table.Th>
          <Table.Th scope="col">Of</Table.Th>
          <Table.Th scope="col">From</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {audit.data.entries.map((entry) => (
          <Table.Tr key={`${entry.at}-${entry.request_id}`}>
            <Table.Td>{new Date(entry.at).toLocaleString()}</Table.Td>
            <Table.Td>{entry.actor.email ?? entry.actor.subject}</Table.Td>
            <Table.Td>
              <Code>{entry.action}</Code>
            </Table.Td>
            <Table.Td>
              {entry.target}
              {typeof entry.details.key_hash === 'string' && (
                <> · key {entry.details.key_hash.slice(0, 16)}…</>
              )}
            </Table.Td>
            <Table.Td>{entry.source_ip}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
