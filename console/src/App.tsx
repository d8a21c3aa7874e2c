import { AppShell, Button, Center, Group, NavLink, Stack, Tabs, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useAuth } from 'react-oidc-context';
import { useConsoleApi, type Me } from './api.ts';
import { ActivitiesPage } from './pages/ActivitiesPage.tsx';
import { AudiencesPage } from './pages/AudiencesPage.tsx';
import { AuditPage } from './pages/AuditPage.tsx';
import { FieldsPage } from './pages/FieldsPage.tsx';
import { EmailsPage } from './pages/EmailsPage.tsx';
import { InstancesPage } from './pages/InstancesPage.tsx';
import { KeysPage } from './pages/KeysPage.tsx';
import { OrganizationsPage } from './pages/OrganizationsPage.tsx';
import { OverviewPage } from './pages/OverviewPage.tsx';
import { PeoplePage } from './pages/PeoplePage.tsx';
import { WebhooksPage } from './pages/WebhooksPage.tsx';
import { Failure, Waiting } from './status.tsx';

/** Signed out: one button to the identity provider's sign-in. */
function SignIn({ region }: { region: string }) {
  const auth = useAuth();
  return (
    <Center h="100vh">
      <Stack align="center" component="main">
        <Title order={1}>CDP console</Title>
        <Text>The {region} region. Sign in with your console account.</Text>
        <Button onClick={() => void auth.signinRedirect()}>Sign in</Button>
      </Stack>
    </Center>
  );
}

/** Signed in: the instances the user may manage, and the selected one's pages. */
function Console({ region }: { region: string }) {
  const auth = useAuth();
  const api = useConsoleApi();
  const me = useQuery({ queryKey: ['me'], queryFn: () => api<Me>('GET', 'me') });
  const [selected, setSelected] = useState<string | undefined>();
  const instance = me.data?.instances.find((candidate) => candidate.id === selected);
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 260, breakpoint: 'sm' }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between">
          <Text fw={700} component="span">
            CDP console · {region}
          </Text>
          <Group>
            <Text size="sm" component="span">
              {me.data?.email ?? auth.user?.profile.email}
            </Text>
            <Button variant="default" size="xs" onClick={() => void auth.removeUser()}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" component="nav" aria-label="Instances">
        <NavLink
          label="All instances"
          active={selected === undefined}
          onClick={() => {
            setSelected(undefined);
          }}
        />
        {me.data?.instances.map((candidate) => (
          <NavLink
            key={candidate.id}
            label={`${candidate.name} (${candidate.id})`}
            active={candidate.id === selected}
            onClick={() => {
              setSelected(candidate.id);
            }}
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>
        {me.isPending && <Waiting what="Loading" />}
        {me.error && <Failure title="The console could not load" error={me.error} />}
        {me.data && !instance && (
          <InstancesPage
            me={me.data}
            onOpen={(id) => {
              setSelected(id);
            }}
          />
        )}
        {instance && (
          <Stack>
            <Title order={1}>{instance.name}</Title>
            <Tabs defaultValue="overview" keepMounted={false}>
              <Tabs.List>
                <Tabs.Tab value="overview">Overview</Tabs.Tab>
                <Tabs.Tab value="keys">Data sources and API keys</Tabs.Tab>
                <Tabs.Tab value="activities">Activity definitions</Tabs.Tab>
                <Tabs.Tab value="people">People</Tabs.Tab>
                <Tabs.Tab value="organizations">Organizations</Tabs.Tab>
                <Tabs.Tab value="audiences">Audiences</Tabs.Tab>
                <Tabs.Tab value="fields">Custom fields</Tabs.Tab>
                <Tabs.Tab value="emails">Emails</Tabs.Tab>
                <Tabs.Tab value="webhooks">Webhooks</Tabs.Tab>
                <Tabs.Tab value="audit">Audit log</Tabs.Tab>
              </Tabs.List>
              <Tabs.Panel value="overview" pt="md">
                <OverviewPage instanceId={instance.id} />
              </Tabs.Panel>
              <Tabs.Panel value="keys" pt="md">
                <KeysPage instanceId={instance.id} />
              </Tabs.Panel>
              <Tabs.Panel value="activities" pt="md">
                <ActivitiesPage instanceId={instance.id} />
              </Tabs.Panel>
              <Tabs.Panel value="people" pt="md">
                <PeoplePage instanceId={instance.id} />
              </Tabs.Panel>
              <Tabs.Panel value="organizations" pt="md">
                <OrganizationsPage instanceId={instance.id} />
              </Tabs.Panel>
              <Tabs.Panel value="audiences" pt="md">
                <AudiencesPage instanceId={instance.id} />
              </Tabs.Panel>
              <Tabs.Panel value="fields" pt="md">
                <FieldsPage instanceId={instance.id} />
              </Tabs.Panel>
              <Tabs.Panel value="emails" pt="md">
                <EmailsPage instanceId={instance.id} />
              </Tabs.Panel>
              <Tabs.Panel value="webhooks" pt="md">
                <WebhooksPage instanceId={instance.id} />
              </Tabs.Panel>
              <Tabs.Panel value="audit" pt="md">
                <AuditPage instanceId={instance.id} />
              </Tabs.Panel>
            </Tabs>
          </Stack>
        )}
      </AppShell.Main>
    </AppShell>
  );
}

export function App({ region }: { region: string }) {
  const auth = useAuth();
  if (auth.isLoading) {
    return (
      <Center h="100vh">
        <Waiting what="Signing in" />
      </Center>
    );
  }
  if (auth.error) {
    return (
      <Center h="100vh">
        <Failure title="Sign-in failed" error={auth.error} />
      </Center>
    );
  }
  return auth.isAuthenticated ? <Console region={region} /> : <SignIn region={region} />;
}
