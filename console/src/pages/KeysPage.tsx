import { Button, Code, CopyButton, Group, Modal, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import {
  useConsoleApi,
  type KeyCreated,
  type KeyRevoked,
  type Keys,
  useRefreshAfterChange,
} from '../api.ts';
import { Failure, Waiting } from '../status.tsx';
import { DataSourceForm, type DataSourcePreferences } from './DataSourceForm.tsx';

const short = (hash: string) => `${hash.slice(0, 16)}…`;
const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '—');

/**
 * An instance's data sources and their API keys: mint one (shown once, in a dialog), revoke
 * one (after a confirmation). Keys are listed by their SHA-256: a key is never kept.
 */
export function KeysPage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const keys = useQuery({
    queryKey: ['keys', instanceId],
    queryFn: () => api<Keys>('POST', 'keys/get', { instance_id: instanceId }),
  });
  const [minted, setMinted] = useState<KeyCreated | undefined>();
  const [revoking, setRevoking] = useState<string | undefined>();
  const [adding, setAdding] = useState(false);
  const [editing, setEditing] = useState<DataSourcePreferences | undefined>();
  const refresh = useRefreshAfterChange(instanceId);
  const changed = () => refresh(['keys', instanceId]);
  const mint = useMutation({
    mutationFn: (dataSource: string) =>
      api<KeyCreated>('POST', 'keys/create', { instance_id: instanceId, data_source: dataSource }),
    onSuccess: async (created) => {
      setMinted(created);
      await changed();
    },
  });
  const addSource = useMutation({
    mutationFn: (source: object) =>
      api<object>('POST', 'data-sources/create', { instance_id: instanceId, data_source: source }),
    onSuccess: async () => {
      setAdding(false);
      await changed();
    },
  });
  const editSource = useMutation({
    mutationFn: (source: object) =>
      api<object>('PUT', 'data-sources/modify', { instance_id: instanceId, data_source: source }),
    onSuccess: async () => {
      setEditing(undefined);
      await changed();
    },
  });
  const revoke = useMutation({
    mutationFn: (keyHash: string) =>
      api<KeyRevoked>('PUT', 'keys/revoke', { instance_id: instanceId, key_hash: keyHash }),
    onSuccess: async () => {
      setRevoking(undefined);
      await changed();
    },
  });

  if (keys.isPending) return <Waiting what="Loading the data sources" />;
  if (keys.error) {
    return <Failure title="The data sources could not load" error={keys.error} />;
  }
  return (
    <Stack>
      <Group justify="flex-end">
        <Button
          onClick={() => {
            setAdding(true);
          }}
        >
          Add a data source
        </Button>
      </Group>
      {(mint.error ?? revoke.error) && (
        <Failure title="The change was not made" error={(mint.error ?? revoke.error) as Error} />
      )}
      {keys.data.data_sources.map((source) => (
        <Stack key={source.name} gap="xs">
          <Group justify="space-between">
            <Title order={2}>{source.name}</Title>
            <Group>
              {source.declared_in_file ? (
                <Text size="sm">Set by the configuration file</Text>
              ) : (
                <Button
                  variant="default"
                  aria-label={`Edit ${source.name}`}
                  onClick={() => {
                    setEditing(source);
                  }}
                >
                  Edit
                </Button>
              )}
              <Button
                onClick={() => {
                  mint.mutate(source.name);
                }}
                loading={mint.isPending && mint.variables === source.name}
              >
                Mint a key for {source.name}
              </Button>
            </Group>
          </Group>
          <Text size="sm">
            Merges by {source.merge_by.join(', ')} (merge strategy {source.merge_strategy}, find
            strategy {source.find_strategy}).
          </Text>
          <Table striped>
            <Table.Caption>API keys of {source.name}, by their SHA-256</Table.Caption>
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">Key (SHA-256)</Table.Th>
                <Table.Th scope="col">Made by</Table.Th>
                <Table.Th scope="col">Created</Table.Th>
                <Table.Th scope="col">State</Table.Th>
                <Table.Th scope="col">Action</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {source.keys.map((key) => (
                <Table.Tr key={key.key_hash}>
                  <Table.Td>
                    <Code>{short(key.key_hash)}</Code>
                  </Table.Td>
                  <Table.Td>{key.origin === 'minted' ? 'minted' : 'configuration file'}</Table.Td>
                  <Table.Td>{when(key.created_at)}</Table.Td>
                  <Table.Td>
                    {key.revoked_at ? (
                      `revoked ${when(key.revoked_at)}`
                    ) : (
                      <Text fw={700}>live</Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    {!key.revoked_at && (
                      <Button
                        size="xs"
                        color="red"
                        variant="light"
                        aria-label={`Revoke key ${short(key.key_hash)}`}
                        onClick={() => {
                          setRevoking(key.key_hash);
                        }}
                      >
                        Revoke
                      </Button>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Stack>
      ))}
      <Modal
        closeButtonProps={{ 'aria-label': 'Close' }}
        transitionProps={{ duration: 0 }}
        opened={adding}
        onClose={() => {
          setAdding(false);
          addSource.reset();
        }}
        title="Add a data source"
      >
        {addSource.error && (
          <Failure title="The data source was not made" error={addSource.error} />
        )}
        <DataSourceForm
          saving={addSource.isPending}
          onSave={(source) => {
            addSource.mutate(source);
          }}
        />
      </Modal>
      <Modal
        closeButtonProps={{ 'aria-label': 'Close' }}
        transitionProps={{ duration: 0 }}
        opened={editing !== undefined}
        onClose={() => {
          setEditing(undefined);
          editSource.reset();
        }}
        title={`Edit ${editing?.name ?? 'the data source'}`}
      >
        {editSource.error && (
          <Failure title="The data source was not changed" error={editSource.error} />
        )}
        {editing && (
          <DataSourceForm
            initial={editing}
            saving={editSource.isPending}
            onSave={(source) => {
              editSource.mutate(source);
            }}
          />
        )}
      </Modal>
      <Modal
        closeButtonProps={{ 'aria-label': 'Close' }}
        transitionProps={{ duration: 0 }}
        opened={minted !== undefined}
        onClose={() => {
          setMinted(undefined);
        }}
        title="Your new API key"
      >
        <Stack>
          <Text>Copy it now: it is shown only this once. Send it as the X-Api-Key header.</Text>
          <Code block data-testid="new-key">
            {minted?.key}
          </Code>
          <CopyButton value={minted?.key ?? ''}>
            {({ copied, copy }) => (
              <Button onClick={copy} variant="light">
                {copied ? 'Copied' : 'Copy the key'}
              </Button>
            )}
          </CopyButton>
        </Stack>
      </Modal>
      <Modal
        closeButtonProps={{ 'aria-label': 'Close' }}
        transitionProps={{ duration: 0 }}
        opened={revoking !== undefined}
        onClose={() => {
          setRevoking(undefined);
        }}
        title="Revoke this key?"
      >
        <Stack>
          <Text>
            Key <Code>{short(revoking ?? '')}</Code> will be refused by the API within seconds. This
            cannot be undone.
          </Text>
          <Group justify="flex-end">
            <Button
              variant="default"
              onClick={() => {
                setRevoking(undefined);
              }}
            >
              Keep it
            </Button>
            <Button
              color="red"
              loading={revoke.isPending}
              onClick={() => {
                if (revoking) revoke.mutate(revoking);
              }}
            >
              Revoke the key
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
