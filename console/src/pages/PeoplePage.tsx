import { Button, Code, Group, Stack, Table, Text, Title } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useConsoleApi, type FilterField, type People, type Profile } from '../api.ts';
import { FilterConditions, useFilterDraft } from '../filter-conditions.tsx';
import { Failure, Waiting } from '../status.tsx';
import { EmailTable } from './EmailsPage.tsx';
import { PageButtons, PeopleTable, SearchForm, usePages } from '../listing.tsx';

const show = (value: unknown) =>
  typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);

/**
 * One person: fields with their labels, tags, the timeline as display text, the emails sent
 * to them and the audiences they are in.
 */
export function PersonProfile({
  instanceId,
  personId,
  onBack,
}: {
  instanceId: string;
  personId: string;
  onBack: () => void;
}) {
  const api = useConsoleApi();
  const profile = useQuery({
    queryKey: ['profile', instanceId, personId],
    queryFn: () =>
      api<Profile>('POST', 'people/profile', { instance_id: instanceId, person_id: personId }),
  });
  if (profile.isPending) return <Waiting what="Loading the person" />;
  if (profile.error) return <Failure title="The person could not load" error={profile.error} />;
  const person = profile.data;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>
          Person <Code>{person.person_id}</Code>
        </Title>
        <Button variant="default" onClick={onBack}>
          Back to the people
        </Button>
      </Group>
      <Table>
        <Table.Caption>Fields</Table.Caption>
        <Table.Tbody>
          {person.fields.map((field) => (
            <Table.Tr key={field.id}>
              <Table.Th scope="row">{field.label}</Table.Th>
              <Table.Td>{show(field.value)}</Table.Td>
            </Table.Tr>
          ))}
          <Table.Tr>
            <Table.Th scope="row">Tags</Table.Th>
            <Table.Td>{person.tags.join(', ') || '—'}</Table.Td>
          </Table.Tr>
          <Table.Tr>
            <Table.Th scope="row">Organization</Table.Th>
            <Table.Td>{person.organization_id ?? '—'}</Table.Td>
          </Table.Tr>
          <Table.Tr>
            <Table.Th scope="row">Last seen</Table.Th>
            <Table.Td>
              {person.last_seen ? new Date(person.last_seen).toLocaleString() : '—'}
            </Table.Td>
          </Table.Tr>
        </Table.Tbody>
      </Table>
      <Title order={3}>Timeline</Title>
      {person.activities.length === 0 ? (
        <Text>No activity yet.</Text>
      ) : (
        <Table striped>
          <Table.Caption>The newest activities first</Table.Caption>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">When</Table.Th>
              <Table.Th scope="col">What</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {person.activities.map((activity) => (
              <Table.Tr key={activity.id}>
                <Table.Td>{new Date(activity.created_at).toLocaleString()}</Table.Td>
                <Table.Td>{activity.display}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <Title order={3}>Emails</Title>
      {person.emails.length === 0 ? (
        <Text>No email sent to this person.</Text>
      ) : (
        <EmailTable
          instanceId={instanceId}
          emails={person.emails}
          caption="The 10 newest emails sent to this person"
        />
      )}
      <Title order={3}>Audiences</Title>
      {person.audiences.length === 0 ? (
        <Text>In no audience.</Text>
      ) : (
        <Table striped>
          <Table.Caption>The audiences this person is in</Table.Caption>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Audience</Table.Th>
              <Table.Th scope="col">Member since</Table.Th>
              <Table.Th scope="col">Their email</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {person.audiences.map((audience) => (
              <Table.Tr key={audience.audience_id}>
                <Table.Td>{audience.name}</Table.Td>
                <Table.Td>
                  {audience.member_from ? new Date(audience.member_from).toLocaleString() : '—'}
                </Table.Td>
                <Table.Td>{audience.subscribed ? 'subscribed' : 'unsubscribed'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}

const peopleInAll = (total: number) => `${total} ${total === 1 ? 'person' : 'people'} in all`;

/** The filter of the people listing: conditions built as for an audience, applied or cleared. */
function PeopleFilter({
  fields,
  onApply,
}: {
  fields: readonly FilterField[];
  onApply: (filter: Record<string, unknown> | undefined) => void;
}) {
  const draft = useFilterDraft(fields);
  return (
    <form
      aria-label="Filter people"
      onSubmit={(event) => {
        event.preventDefault();
        onApply(draft.filter);
      }}
    >
      <Stack>
        <Title order={3}>Filter the people</Title>
        <FilterConditions draft={draft} matchLabel="Show the people who match" />
        <Group>
          <Button type="submit">Apply the filter</Button>
          <Button
            variant="default"
            onClick={() => {
              onApply(undefined);
            }}
          >
            Clear the filter
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** The instance's people: a search, pages, and a person's profile. */
export function PeoplePage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const [q, setQ] = useState('');
  const [opened, setOpened] = useState<string | undefined>();
  const [filtering, setFiltering] = useState(false);
  const [filter, setFilter] = useState<Record<string, unknown> | undefined>();
  const pages = usePages();
  const people = useQuery({
    queryKey: ['people', instanceId, q, filter, pages.current],
    queryFn: () =>
      api<People>('POST', 'people/get', {
        instance_id: instanceId,
        limit: 25,
        ...(q ? { q } : {}),
        ...(filter ? { filter } : {}),
        ...pages.current,
      }),
    // The last page stays shown while the next loads: the filter's draft is not lost.
    placeholderData: keepPreviousData,
  });
  const fields = people.data?.filter_fields ?? [];
  if (opened) {
    return (
      <PersonProfile
        instanceId={instanceId}
        personId={opened}
        onBack={() => {
          setOpened(undefined);
        }}
      />
    );
  }
  return (
    <Stack>
      <Title order={2}>People</Title>
      <SearchForm
        label="Search people"
        onSearch={(words) => {
          setQ(words);
          pages.reset();
        }}
      >
        <Button
          variant="default"
          aria-expanded={filtering}
          disabled={fields.length === 0}
          onClick={() => {
            setFiltering(!filtering);
          }}
        >
          {filtering ? 'Hide the filter' : 'Filter people'}
        </Button>
      </SearchForm>
      {filtering && fields.length > 0 && (
        <PeopleFilter
          fields={fields}
          onApply={(next) => {
            setFilter(next);
            pages.reset();
          }}
        />
      )}
      {people.isPending && <Waiting what="Loading the people" />}
      {people.error && <Failure title="The people could not load" error={people.error} />}
      {people.data && (
        <>
          <PeopleTable
            caption={`Page ${pages.number}: ${people.data.contacts.length} of ${people.data.meta.total_matches ?? 0} matching${filter ? ' the filter' : ''}, ${peopleInAll(people.data.meta.total_contacts ?? 0)}`}
            contacts={people.data.contacts}
            onOpen={setOpened}
          />
          <PageButtons what="people" pages={pages} answer={people.data} />
        </>
      )}
    </Stack>
  );
}
