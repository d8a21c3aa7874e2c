import { Button, Stack, Table, Text, Title, VisuallyHidden } from '@mantine/core';
import type { Me } from '../api.ts';

/** The instances the signed-in user may manage. */
export function InstancesPage({ me, onOpen }: { me: Me; onOpen: (id: string) => void }) {
  return (
    <Stack>
      <Title order={1}>Instances</Title>
      {me.instances.length === 0 ? (
        <Text>
          Your account has no instance of this region yet: ask an administrator to add you to an
          instance&apos;s group.
        </Text>
      ) : (
        <Table striped>
          <Table.Caption>
            Instances you may manage (
            {me.platform_admin ? 'all, as a platform admin' : 'by your groups'})
          </Table.Caption>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">ID</Table.Th>
              <Table.Th scope="col">Plan</Table.Th>
              <Table.Th scope="col">
                <VisuallyHidden>Open</VisuallyHidden>
              </Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {me.instances.map((instance) => (
              <Table.Tr key={instance.id}>
                <Table.Td>{instance.name}</Table.Td>
                <Table.Td>{instance.id}</Table.Td>
                <Table.Td>{instance.plan}</Table.Td>
                <Table.Td>
                  <Button
                    size="xs"
                    variant="light"
                    onClick={() => {
                      onOpen(instance.id);
                    }}
                  >
                    Open {instance.name}
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}
