import { Button, Code, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useConsoleApi, type People, type Profile } from '../api.ts';
import { Failure, Waiting } from '../status.tsx';
import { EmailTable } from './EmailsPage.tsx';

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

/** The instance's people: a search, a page, and a person's profile. */
export function PeoplePage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const [typed, setTyped] = useState('');
  const [q, setQ] = useState('');
  const [opened, setOpened] = useState<string | undefined>();
  const people = useQuery({
    queryKey: ['people', instanceId, q],
    queryFn: () =>
      api<People>('POST', 'people/get', {
        instance_id: instanceId,
        limit: 25,
        ...(q ? { q } : {}),
      }),
  });
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
      <form
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          setQ(typed.trim());
        }}
      >
        <Group align="flex-end">
          <TextInput
            label="Search people"
            value={typed}
            onChange={(event) => {
              setTyped(event.currentTarget.value);
            }}
          />
          <Button type="submit">Search</Button>
        </Group>
      </form>
      {people.isPending && <Waiting what="Loading the people" />}
      {people.error && <Failure title="The people could not load" error={people.error} />}
      {people.data && (
        <Table striped>
          <Table.Caption>
            {people.data.contacts.length} of {people.data.meta.total_matches ?? 0} matching,{' '}
            {people.data.meta.total_contacts ?? 0} people in all
          </Table.Caption>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Email</Table.Th>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Profile</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {people.data.contacts.map((person) => {
              const fields = (person.fields ?? {}) as Record<string, string | undefined>;
              const email = fields['str::email'] ?? person.id;
              return (
                <Table.Tr key={person.id}>
                  <Table.Td>{email}</Table.Td>
                  <Table.Td>
                    {[fields['str::first'], fields['str::last']].filter(Boolean).join(' ') || '—'}
                  </Table.Td>
                  <Table.Td>
                    <Button
                      size="xs"
                      variant="default"
                      onClick={() => {
                        setOpened(person.id);
                      }}
                    >
                      Open {email}
                    </Button>
                  </Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}
