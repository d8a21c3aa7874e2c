import { Button, Group, Stack, TextInput } from '@mantine/core';
import { useState } from 'react';
import type { FilterField } from '../api.ts';
import { FilterConditions, useFilterDraft } from '../filter-conditions.tsx';

/**
 * The audiences page's form: a name and a filter from the filter builder (conditions on the
 * instance's fields, combined with "and" or "or"), shown in the API's language as it is sent.
 * The server checks it with the public API's parser.
 */
export function AudienceForm({
  fields,
  saving,
  onSave,
}: {
  fields: readonly FilterField[];
  saving: boolean;
  onSave: (name: string, filter: Record<string, unknown>) => void;
}) {
  const [name, setName] = useState('');
  const draft = useFilterDraft(fields);
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        onSave(name, draft.filter);
      }}
    >
      <Stack>
        <TextInput
          label="Audience name"
          required
          value={name}
          onChange={(event) => {
            setName(event.currentTarget.value);
          }}
        />
        <FilterConditions draft={draft} matchLabel="People belong when they match" />
        <Group justify="flex-end">
          <Button type="submit" loading={saving}>
            Save the audience
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
