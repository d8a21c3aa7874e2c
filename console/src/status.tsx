import { Alert, Group, Loader, Text } from '@mantine/core';

/** Something is loading: a spinner, and words a screen reader announces. */
export function Waiting({ what }: { what: string }) {
  return (
    <Group role="status" gap="xs">
      <Loader size="sm" aria-hidden />
      <Text>{what}…</Text>
    </Group>
  );
}

/** Something failed: what, and the API's own words, announced at once. */
export function Failure({ title, error }: { title: string; error: Error }) {
  return (
    <Alert color="red" title={title} role="alert">
      {error.message}
    </Alert>
  );
}
