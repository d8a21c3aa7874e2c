import { Button, Code, CopyButton, Group, Modal, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import {
  useConsoleApi,
  type Attempts,
  type Replayed,
  type SecretRotated,
  type WebhookListing,
  type Webhooks,
  useRefreshAfterChange,
} from '../api.ts';
import { NewerOlderButtons, useTrail } from '../listing.tsx';
import { Failure, Waiting } from '../status.tsx';
import { healthText } from '../webhook-health.ts';

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '—');

/** One endpoint's delivery attempts, newest first, each replayable. */
function AttemptsSection({ instanceId, hook }: { instanceId: string; hook: WebhookListing }) {
  const api = useConsoleApi();
  const refresh = useRefreshAfterChange(instanceId);
  const pages = useTrail<string | undefined>(undefined);
  const cursor = pages.current;
  const attempts = useQuery({
    queryKey: ['webhook-attempts', instanceId, hook.id, cursor],
    queryFn: () =>
      api<Attempts>('POST', 'webhooks/attempts', {
        instance_id: instanceId,
        webhook_id: hook.id,
        limit: 25,
        ...(cursor ? { cursor_id: cursor } : {}),
      }),
  });
  const replay = useMutation({
    mutationFn: (eventId: string) =>
      api<Replayed>('POST', 'webhooks/replay', {
        instance_id: instanceId,
        webhook_id: hook.id,
        event_id: eventId,
      }),
    onSuccess: () => refresh(['webhook-attempts', instanceId, hook.id]),
  });
  return (
    <Stack>
      <Title order={3}>Delivery attempts to {hook.url}</Title>
      {replay.error && <Failure title="The event was not sent again" error={replay.error} />}
      {replay.data && (
        <Text role="status">
          Event {replay.data.event_id} queued again ({replay.data.events_queued} queued): its
          attempts appear below.
        </Text>
      )}
      {attempts.isPending && <Waiting what="Loading the attempts" />}
      {attempts.error && <Failure title="The attempts could not load" error={attempts.error} />}
      {attempts.data &&
        (attempts.data.deliveries.length === 0 ? (
          <Text>No attempt in the last 30 days.</Text>
        ) : (
          <Table striped>
            <Table.Caption>Attempts of the last 30 days, newest first</Table.Caption>
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">When</Table.Th>
                <Table.Th scope="col">Event</Table.Th>
                <Table.Th scope="col">Attempt</Table.Th>
                <Table.Th scope="col">Result</Table.Th>
                <Table.Th scope="col">HTTP status</Table.Th>
                <Table.Th scope="col">Duration</Table.Th>
                <Table.Th scope="col">Action</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {attempts.data.deliveries.map((attempt) => (
                <Table.Tr
                  key={`${attempt.event_id}-${attempt.replay_id ?? ''}-${String(attempt.attempt)}`}
                >
                  <Table.Td>{when(attempt.attempted_at)}</Table.Td>
                  <Table.Td>
                    {attempt.event_type} <Code>{attempt.event_id}</Code>
                  </Table.Td>
                  <Table.Td>
                    {attempt.attempt}
                    {attempt.replay_id ? ' (replay)' : ''}
                  </Table.Td>
                  <Table.Td>
                    <Text span fw={700} size="sm">
                      {attempt.status}
                    </Text>
                    {attempt.error ? ` ${attempt.error}` : ''}
                  </Table.Td>
                  <Table.Td>{attempt.status_code ?? '—'}</Table.Td>
                  <Table.Td>
                    {attempt.latency_ms === null ? '—' : `${String(attempt.latency_ms)} ms`}
                  </Table.Td>
                  <Table.Td>
                    <Button
                      size="xs"
                      variant="light"
                      aria-label={`Send again: event ${attempt.event_id}`}
                      loading={replay.isPending && replay.variables === attempt.event_id}
                      onClick={() => {
                        replay.mutate(attempt.event_id);
                      }}
                    >
                      Send again
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ))}
      <NewerOlderButtons what="attempts" trail={pages} older={attempts.data?.cursor_id} />
    </Stack>
  );
}

/**
 * The instance's webhooks with their health; one endpoint's attempts (each event can be sent
 * again) and its secret rotated (the new one shown once, the old one signing for a day).
 */
export function WebhooksPage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const refresh = useRefreshAfterChange(instanceId);
  const webhooks = useQuery({
    queryKey: ['webhooks', instanceId],
    queryFn: () => api<Webhooks>('POST', 'webhooks/get', { instance_id: instanceId }),
  });
  const [opened, setOpened] = useState<string | undefined>();
  const [rotating, setRotating] = useState<WebhookListing | undefined>();
  const [rotated, setRotated] = useState<SecretRotated | undefined>();
  const rotate = useMutation({
    mutationFn: (webhookId: string) =>
      api<SecretRotated>('PUT', 'webhooks/rotate', {
        instance_id: instanceId,
        webhook_id: webhookId,
      }),
    onSuccess: async (answer) => {
      // The same dialog shows the secret: one dialog, one overlay.
      setRotated(answer);
      await refresh(['webhooks', instanceId]);
    },
  });
  if (webhooks.isPending) return <Waiting what="Loading the webhooks" />;
  if (webhooks.error) return <Failure title="The webhooks could not load" error={webhooks.error} />;
  const hook = webhooks.data.webhooks.find((candidate) => candidate.id === opened);
  return (
    <Stack>
      <Title order={2}>Webhooks</Title>
      {rotate.error && <Failure title="The secret was not rotated" error={rotate.error} />}
      {webhooks.data.webhooks.length === 0 ? (
        <Text>No webhook: make one with POST /v1/webhooks/create.</Text>
      ) : (
        <Table striped>
          <Table.Caption>The instance&apos;s webhook endpoints</Table.Caption>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">URL</Table.Th>
              <Table.Th scope="col">Events</Table.Th>
              <Table.Th scope="col">Health</Table.Th>
              <Table.Th scope="col">Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {webhooks.data.webhooks.map((candidate) => (
              <Table.Tr key={candidate.id}>
                <Table.Td>
                  <Code>{candidate.url}</Code>
                  {candidate.description ? <Text size="sm">{candidate.description}</Text> : null}
                </Table.Td>
                <Table.Td>{candidate.events.join(', ')}</Table.Td>
                <Table.Td>
                  <Text span fw={700} size="sm">
                    {candidate.health.state}
                  </Text>{' '}
                  <Text span size="sm">
                    {healthText(candidate.health, candidate.disabled_reason)}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Group gap="xs">
                    <Button
                      size="xs"
                      variant={candidate.id === opened ? 'filled' : 'light'}
                      aria-label={`Attempts of ${candidate.url}`}
                      aria-pressed={candidate.id === opened}
                      onClick={() => {
                        setOpened(candidate.id === opened ? undefined : candidate.id);
                      }}
                    >
                      Attempts
                    </Button>
                    <Button
                      size="xs"
                      variant="light"
                      aria-label={`Rotate the secret of ${candidate.url}`}
                      onClick={() => {
                        setRotating(candidate);
                      }}
                    >
                      Rotate the secret
                    </Button>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {hook && <AttemptsSection key={hook.id} instanceId={instanceId} hook={hook} />}
      <Modal
        closeButtonProps={{ 'aria-label': 'Close' }}
        transitionProps={{ duration: 0 }}
        opened={rotating !== undefined}
        onClose={() => {
          setRotating(undefined);
          setRotated(undefined);
        }}
        title={rotated ? "The webhook's new secret" : "Rotate this webhook's secret?"}
      >
        {rotated ? (
          <Stack>
            <Text>
              Copy it now: it is shown only this once. The previous secret signs until{' '}
              {when(rotated.previous_secret_expires_at)}.
            </Text>
            <Code block data-testid="new-secret">
              {rotated.secret}
            </Code>
            <CopyButton value={rotated.secret}>
              {({ copied, copy }) => (
                <Button onClick={copy} variant="default">
                  {copied ? 'Copied' : 'Copy the secret'}
                </Button>
              )}
            </CopyButton>
          </Stack>
        ) : (
          <Stack>
            <Text>
              Deliveries to <Code>{rotating?.url}</Code> are signed with a new secret from now on.
              The current secret keeps signing beside it for 24 hours, so that the receiver can
              switch without missing a delivery.
            </Text>
            <Group justify="flex-end">
              <Button
                variant="default"
                onClick={() => {
                  setRotating(undefined);
                }}
              >
                Keep the secret
              </Button>
              <Button
                loading={rotate.isPending}
                onClick={() => {
                  if (rotating) rotate.mutate(rotating.id);
                }}
              >
                Rotate the secret
              </Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}
