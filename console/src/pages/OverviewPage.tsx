import { Code, Paper, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { useConsoleApi, type Overview } from '../api.ts';
import { Failure, Waiting } from '../status.tsx';
import { healthText } from '../webhook-health.ts';

const number = (value: number) => value.toLocaleString('en');

/** One figure: its label, then its value, read together by a screen reader. */
function Figure({ label, value, hint }: { label: string; value: number; hint?: string }) {
  const id = useId();
  return (
    <Paper withBorder p="md" role="group" aria-labelledby={id}>
      <Text id={id} size="sm" c="dimmed">
        {label}
      </Text>
      <Text fz="xl" fw={700}>
        {number(value)}
      </Text>
      {hint && (
        <Text size="xs" c="dimmed">
          {hint}
        </Text>
      )}
    </Paper>
  );
}

const when = (at: string) => new Date(at).toUTCString();

function attemptText(attempt: NonNullable<Overview['webhooks'][number]['last_attempt']>) {
  const outcome = attempt.outcome === 'succeeded' ? 'Succeeded' : 'Failed';
  const answer = attempt.status_code === null ? 'no answer' : `HTTP ${String(attempt.status_code)}`;
  return `${outcome} (${answer}), ${when(attempt.at)}`;
}

function Webhooks({ webhooks }: { webhooks: Overview['webhooks'] }) {
  if (webhooks.length === 0) return <Text>This instance has no webhooks.</Text>;
  return (
    <Table striped>
      <Table.Caption>
        Each webhook endpoint, its state and its latest delivery attempt
      </Table.Caption>
      <Table.Thead>
        <Table.Tr>
          <Table.Th scope="col">Endpoint</Table.Th>
          <Table.Th scope="col">State</Table.Th>
          <Table.Th scope="col">Failures in a row</Table.Th>
          <Table.Th scope="col">Latest attempt</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {webhooks.map((webhook) => (
          <Table.Tr key={webhook.id}>
            <Table.Th scope="row" fw={400}>
              <Code>{webhook.url}</Code>
              {webhook.description && <Text size="sm">{webhook.description}</Text>}
            </Table.Th>
            <Table.Td>
              <Text fw={600} size="sm">
                {webhook.health.state}
              </Text>
              <Text size="sm">{healthText(webhook.health, webhook.disabled_reason)}</Text>
            </Table.Td>
            <Table.Td>{number(webhook.health.failures)}</Table.Td>
            <Table.Td>
              {webhook.last_attempt
                ? attemptText(webhook.last_attempt)
                : 'None in the last 30 days'}
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

function DeadLetters({ deadLetters }: { deadLetters: Overview['dead_letters'] }) {
  if (!deadLetters) {
    return (
      <Text>
        The region&apos;s dead-letter queues are shared by every instance: their depths are shown to
        platform admins only.
      </Text>
    );
  }
  return (
    <Table striped>
      <Table.Caption>
        Messages waiting in the region&apos;s dead-letter queues (all instances):{' '}
        {number(deadLetters.total)}
      </Table.Caption>
      <Table.Thead>
        <Table.Tr>
          <Table.Th scope="col">Queue</Table.Th>
          <Table.Th scope="col">Messages waiting</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {deadLetters.queues.map((queue) => (
          <Table.Tr key={queue.queue}>
            <Table.Th scope="row" fw={400}>
              {queue.queue}
            </Table.Th>
            <Table.Td>{queue.messages === null ? 'not known' : number(queue.messages)}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

/** An instance at a glance: what it holds, its week of email, its webhooks, dead letters. */
export function OverviewPage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const overview = useQuery({
    queryKey: ['overview', instanceId],
    queryFn: () => api<Overview>('POST', 'instances/overview', { instance_id: instanceId }),
  });
  if (overview.isPending) return <Waiting what="Loading the overview" />;
  if (overview.error) return <Failure title="The overview could not load" error={overview.error} />;
  const { people, emails, webhooks, dead_letters: deadLetters } = overview.data;
  return (
    <Stack>
      <Title order={2}>Overview</Title>
      <Title order={3}>People and organizations</Title>
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <Figure label="People" value={people.people} />
        <Figure label="Subscribers" value={people.subscribers} hint="People who may be emailed" />
        <Figure label="Organizations" value={people.organizations} />
      </SimpleGrid>
      <Title order={3}>Emails in the last 7 days</Title>
      <Text size="sm">
        Transactional emails, {emails.from} to {emails.to} (UTC days, today included).
      </Text>
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <Figure label="Sent" value={emails.sent} />
        <Figure label="Bounced" value={emails.bounced} hint="The address bounced for good" />
        <Figure label="Complaints" value={emails.complained} hint="Marked as spam" />
      </SimpleGrid>
      <Title order={3}>Webhooks</Title>
      <Webhooks webhooks={webhooks} />
      <Title order={3}>Dead letters</Title>
      <DeadLetters deadLetters={deadLetters} />
    </Stack>
  );
}
