import { Button, Code, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useConsoleApi, type OrganizationProfile, type Organizations } from '../api.ts';
import { PageButtons, PeopleTable, SearchForm, usePages } from '../listing.tsx';
import { Failure, Waiting } from '../status.tsx';
import { PersonProfile } from './PeoplePage.tsx';

const show = (value: unknown) =>
  typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);

/** One organization: its fields with their labels, tags, and its people a page at a time. */
function OrganizationView({
  instanceId,
  organizationId,
  onBack,
}: {
  instanceId: string;
  organizationId: string;
  onBack: () => void;
}) {
  const api = useConsoleApi();
  const pages = usePages();
  const [person, setPerson] = useState<string | undefined>();
  const profile = useQuery({
    queryKey: ['organization', instanceId, organizationId, pages.current],
    queryFn: () =>
      api<OrganizationProfile>('POST', 'organizations/profile', {
        instance_id: instanceId,
        organization_id: organizationId,
        limit: 25,
        ...pages.current,
      }),
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
  if (profile.isPending) return <Waiting what="Loading the organization" />;
  if (profile.error) {
    return <Failure title="The organization could not load" error={profile.error} />;
  }
  const organization = profile.data;
  const name = organization.fields.find((field) => field.id === 'str:o:name')?.value;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>
          {typeof name === 'string' ? name : 'Organization'}{' '}
          <Code>{organization.organization_id}</Code>
        </Title>
        <Button variant="default" onClick={onBack}>
          Back to the organizations
        </Button>
      </Group>
      {organization.archived_at && (
        <Text>Archived on {new Date(organization.archived_at).toLocaleString()}.</Text>
      )}
      <Table>
        <Table.Caption>Fields</Table.Caption>
        <Table.Tbody>
          {organization.fields.map((field) => (
            <Table.Tr key={field.id}>
              <Table.Th scope="row">{field.label}</Table.Th>
              <Table.Td>{show(field.value)}</Table.Td>
            </Table.Tr>
          ))}
          <Table.Tr>
            <Table.Th scope="row">Tags</Table.Th>
            <Table.Td>{organization.tags.join(', ') || '—'}</Table.Td>
          </Table.Tr>
          <Table.Tr>
            <Table.Th scope="row">Created</Table.Th>
            <Table.Td>{new Date(organization.created).toLocaleString()}</Table.Td>
          </Table.Tr>
          <Table.Tr>
            <Table.Th scope="row">People</Table.Th>
            <Table.Td>{organization.member_count}</Table.Td>
          </Table.Tr>
        </Table.Tbody>
      </Table>
      <Title order={3}>People</Title>
      {organization.people.contacts.length === 0 && pages.number === 1 ? (
        <Text>Nobody belongs to this organization yet.</Text>
      ) : (
        <>
          <PeopleTable
            caption={`Page ${pages.number}: ${organization.people.contacts.length} of ${organization.member_count} people, newest first`}
            contacts={organization.people.contacts}
            onOpen={setPerson}
          />
          <PageButtons what="people" pages={pages} answer={organization.people} />
        </>
      )}
    </Stack>
  );
}

/** The instance's organizations: a search by name, pages, and an organization's profile. */
export function OrganizationsPage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const [q, setQ] = useState('');
  const [opened, setOpened] = useState<string | undefined>();
  const pages = usePages();
  const organizations = useQuery({
    queryKey: ['organizations', instanceId, q, pages.current],
    queryFn: () =>
      api<Organizations>('POST', 'organizations/get', {
        instance_id: instanceId,
        limit: 25,
        ...(q ? { q } : {}),
        ...pages.current,
      }),
  });
  if (opened) {
    return (
      <OrganizationView
        instanceId={instanceId}
        organizationId={opened}
        onBack={() => {
          setOpened(undefined);
        }}
      />
    );
  }
  return (
    <Stack>
      <Title order={2}>Organizations</Title>
      <SearchForm
        label="Search organizations by name"
        onSearch={(words) => {
          setQ(words);
          pages.reset();
        }}
      />
      {organizations.isPending && <Waiting what="Loading the organizations" />}
      {organizations.error && (
        <Failure title="The organizations could not load" error={organizations.error} />
      )}
      {organizations.data && (
        <>
          <Table striped>
            <Table.Caption>
              Page {pages.number}: {organizations.data.organizations.length} of{' '}
              {organizations.data.meta.total_matches} matching,{' '}
              {organizations.data.meta.total_organizations} organizations in all
            </Table.Caption>
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">Name</Table.Th>
                <Table.Th scope="col">Website</Table.Th>
                <Table.Th scope="col">Industry</Table.Th>
                <Table.Th scope="col">Profile</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {organizations.data.organizations.map((organization) => {
                const fields = (organization.fields ?? {}) as Record<string, string | undefined>;
                const name = fields['str:o:name'] ?? organization.id;
                return (
                  <Table.Tr key={organization.id}>
                    <Table.Td>{name}</Table.Td>
                    <Table.Td>{fields['str:o:website'] ?? '—'}</Table.Td>
                    <Table.Td>{fields['str:o:industry'] ?? '—'}</Table.Td>
                    <Table.Td>
                      <Button
                        size="xs"
                        variant="default"
                        onClick={() => {
                          setOpened(organization.id);
                        }}
                      >
                        Open {name}
                      </Button>
                    </Table.Td>
                  </Table.Tr>
                );
              })}
            </Table.Tbody>
          </Table>
          <PageButtons what="organizations" pages={pages} answer={organizations.data} />
        </>
      )}
    </Stack>
  );
}
