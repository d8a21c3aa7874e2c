import {
  Button,
  Group,
  Modal,
  NativeSelect,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import {
  useConsoleApi,
  type AudienceAnswer,
  type AudienceMembers,
  type Audiences,
  type AudienceSummary,
  useRefreshAfterChange,
} from '../api.ts';
import { PageButtons, PeopleTable, usePages } from '../listing.tsx';
import { Failure, Waiting } from '../status.tsx';
import { AudienceForm } from './AudienceForm.tsx';
import { PersonProfile } from './PeoplePage.tsx';

/** Audiences a page (the API's largest page of `audiences/get`). */
const PAGE = 40;

/** Where an audience stands: its members still being found, held, archived, or kept current. */
function stateOf(audience: AudienceSummary): string {
  if (audience.archived_at) return 'archived: no longer kept current';
  if (audience.held_reason) return `held: ${audience.held_reason}`;
  if (audience.building) {
    const { evaluated, queued, done_shards: done } = audience.build_progress;
    return `finding its members: ${evaluated} of ${queued} people checked so far (${done} of 16 parts walked)`;
  }
  return audience.last_built_at
    ? `kept current (members found by ${new Date(audience.last_built_at).toLocaleString()})`
    : 'kept current';
}

/** An audience's members, a page at a time, each openable. */
function AudienceMembersView({
  instanceId,
  audience,
  onBack,
}: {
  instanceId: string;
  audience: AudienceSummary;
  onBack: () => void;
}) {
  const api = useConsoleApi();
  const pages = usePages();
  const [person, setPerson] = useState<string | undefined>();
  const members = useQuery({
    queryKey: ['audience-members', instanceId, audience.id, pages.current],
    queryFn: () =>
      api<AudienceMembers>('POST', 'audiences/members', {
        instance_id: instanceId,
        audience_id: audience.id,
        limit: 25,
        ...pages.current,
      }),
    // While its members are being found, the first page is asked again.
    refetchInterval: audience.building && pages.number === 1 ? 2000 : false,
  });
  if (person) {
    return (
      <PersonProfile
        instanceId={instanceId}
        personId={person}
        onBack={() => {
          setPerson(undefined);
        }}
      />
    );
  }
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Members of {audience.name}</Title>
        <Button variant="default" onClick={onBack}>
          Back to the audiences
        </Button>
      </Group>
      <Text>State: {stateOf(audience)}.</Text>
      {members.isPending && <Waiting what="Loading the members" />}
      {members.error && <Failure title="The members could not load" error={members.error} />}
      {members.data &&
        (members.data.contacts.length === 0 && pages.number === 1 ? (
          <Text>
            {audience.building
              ? 'No member found yet: its members are still being found.'
              : 'Nobody matches its filter.'}
          </Text>
        ) : (
          <>
            <PeopleTable
              caption={`Page ${pages.number}: ${members.data.contacts.length} of ${members.data.total} members, newest first`}
              contacts={members.data.contacts}
              onOpen={setPerson}
            />
            <PageButtons what="members" pages={pages} answer={members.data} />
          </>
        ))}
    </Stack>
  );
}

/** The instance's audiences: their counters and state, the filter builder, their members. */
export function AudiencesPage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const [archived, setArchived] = useState(false);
  const [typed, setTyped] = useState('');
  const [term, setTerm] = useState('');
  const [offset, setOffset] = useState(0);
  const [making, setMaking] = useState(false);
  const [opened, setOpened] = useState<string | undefined>();
  const audiences = useQuery({
    queryKey: ['audiences', instanceId, archived, term, offset],
    queryFn: () =>
      api<Audiences>('POST', 'audiences/get', {
        instance_id: instanceId,
        archived,
        offset,
        ...(term ? { search_term: term } : {}),
      }),
    // Counters move as a build finds members: asked again until every build is over.
    refetchInterval: (query) =>
      query.state.data?.audiences.some((audience) => audience.building) ? 2000 : false,
  });
  const refresh = useRefreshAfterChange(instanceId);
  const changed = () => refresh(['audiences', instanceId]);
  const create = useMutation({
    mutationFn: (body: { name: string; filter: Record<string, unknown> }) =>
      api<AudienceAnswer>('POST', 'audiences/create', { instance_id: instanceId, ...body }),
    onSuccess: async () => {
      setMaking(false);
      await changed();
    },
  });
  const archive = useMutation({
    mutationFn: (id: string) =>
      api<AudienceAnswer>('PUT', 'audiences/archive', {
        instance_id: instanceId,
        audience_id: id,
      }),
    onSuccess: changed,
  });

  if (audiences.isPending) return <Waiting what="Loading the audiences" />;
  if (audiences.error) {
    return <Failure title="The audiences could not load" error={audiences.error} />;
  }
  const shown = audiences.data.audiences.find((audience) => audience.id === opened);
  if (shown) {
    return (
      <AudienceMembersView
        instanceId={instanceId}
        audience={shown}
        onBack={() => {
          setOpened(undefined);
        }}
      />
    );
  }
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Audiences</Title>
        <Button
          onClick={() => {
            setMaking(true);
          }}
        >
          Make an audience
        </Button>
      </Group>
      <form
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          setTerm(typed.trim());
          setOffset(0);
        }}
      >
        <Group align="flex-end">
          <NativeSelect
            label="Show"
            value={archived ? 'archived' : 'live'}
            data={[
              { value: 'live', label: 'live audiences' },
              { value: 'archived', label: 'archived audiences' },
            ]}
            onChange={(event) => {
              setArchived(event.currentTarget.value === 'archived');
              setOffset(0);
            }}
            w={240}
          />
          <TextInput
            label="Search audiences by name"
            value={typed}
            onChange={(event) => {
              setTyped(event.currentTarget.value);
            }}
          />
          <Button type="submit">Search</Button>
        </Group>
      </form>
      {archive.error && <Failure title="The audience was not archived" error={archive.error} />}
      <Table striped>
        <Table.Caption>
          {archived ? 'Archived audiences' : 'Live audiences'} ({audiences.data.total}
          {term ? ' matching' : ''}), newest first: members and subscribers from counters kept with
          each membership
        </Table.Caption>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Name</Table.Th>
            <Table.Th scope="col">Members</Table.Th>
            <Table.Th scope="col">Subscribers</Table.Th>
            <Table.Th scope="col">Added in 30 days</Table.Th>
            <Table.Th scope="col">State</Table.Th>
            <Table.Th scope="col">Actions</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {audiences.data.audiences.map((audience) => (
            <Table.Tr key={audience.id}>
              <Table.Td>{audience.name}</Table.Td>
              <Table.Td>{audience.members}</Table.Td>
              <Table.Td>{audience.subscribers}</Table.Td>
              <Table.Td>{audience.added_last_30_days}</Table.Td>
              <Table.Td>{stateOf(audience)}</Table.Td>
              <Table.Td>
                <Group gap="xs">
                  <Button
                    size="xs"
                    variant="default"
                    onClick={() => {
                      setOpened(audience.id);
                    }}
                  >
                    Members of {audience.name}
                  </Button>
                  {!audience.archived_at && (
                    <Button
                      size="xs"
                      variant="default"
                      loading={archive.isPending && archive.variables === audience.id}
                      onClick={() => {
                        archive.mutate(audience.id);
                      }}
                    >
                      Archive {audience.name}
                    </Button>
                  )}
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {audiences.data.audiences.length === 0 && <Text>No audience here.</Text>}
      <Group>
        <Button
          variant="default"
          disabled={offset === 0}
          onClick={() => {
            setOffset(Math.max(0, offset - PAGE));
          }}
        >
          Previous page of audiences
        </Button>
        <Button
          variant="default"
          disabled={!audiences.data.has_more}
          onClick={() => {
            setOffset(audiences.data.next_offset);
          }}
        >
          Next page of audiences
        </Button>
      </Group>
      <Modal
        opened={making}
        onClose={() => {
          setMaking(false);
          create.reset();
        }}
        title="Make an audience"
        size="xl"
        closeButtonProps={{ 'aria-label': 'Close' }}
        transitionProps={{ duration: 0 }}
      >
        {create.error && <Failure title="The audience was not made" error={create.error} />}
        {making && (
          <AudienceForm
            fields={audiences.data.filter_fields}
            saving={create.isPending}
            onSave={(name, filter) => {
              create.mutate({ name, filter });
            }}
          />
        )}
      </Modal>
    </Stack>
  );
}
