import { Button, Group, NativeSelect, Stack, TextInput } from '@mantine/core';
import { useState } from 'react';

const MERGE_KEYS = [
  { value: 'str::email', label: 'Email (str::email)' },
  { value: 'str::ei', label: 'External ID (str::ei)' },
  { value: 'str::person_id', label: 'Person ID (str::person_id), alone' },
];

/** A data source's name and merge preferences, as the console's API gives and takes them. */
export interface DataSourcePreferences {
  name: string;
  merge_by: string[];
  merge_strategy: number;
  find_strategy: number;
}

interface SourceDraft {
  name: string;
  first: string;
  second: string;
  mergeStrategy: string;
  findStrategy: string;
}

/**
 * A data source's name and merge preferences (the configuration file's rules): a new one, or
 * `initial`'s new preferences (its name stays: its keys name it).
 */
export function DataSourceForm({
  initial,
  saving,
  onSave,
}: {
  initial?: DataSourcePreferences;
  saving: boolean;
  onSave: (source: DataSourcePreferences) => void;
}) {
  const [draft, setDraft] = useState<SourceDraft>({
    name: initial?.name ?? '',
    first: initial?.merge_by[0] ?? 'str::email',
    second: initial?.merge_by[1] ?? '',
    mergeStrategy: String(initial?.merge_strategy ?? 2),
    findStrategy: String(initial?.find_strategy ?? 0),
  });
  const set = (change: Partial<SourceDraft>) => {
    setDraft((current) => ({ ...current, ...change }));
  };
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        onSave({
          name: draft.name.trim(),
          merge_by: [draft.first, ...(draft.second ? [draft.second] : [])],
          merge_strategy: Number(draft.mergeStrategy),
          find_strategy: Number(draft.findStrategy),
        });
      }}
    >
      <Stack>
        <TextInput
          label="Data source name"
          required
          readOnly={initial !== undefined}
          {...(initial ? { description: 'A data source keeps its name: its keys name it' } : {})}
          value={draft.name}
          onChange={(event) => {
            set({ name: event.currentTarget.value });
          }}
        />
        <NativeSelect
          label="Merge by"
          value={draft.first}
          data={MERGE_KEYS}
          onChange={(event) => {
            set({ first: event.currentTarget.value });
          }}
        />
        <NativeSelect
          label="Then by (optional)"
          value={draft.second}
          data={[{ value: '', label: 'nothing else' }, ...MERGE_KEYS.slice(0, 2)]}
          onChange={(event) => {
            set({ second: event.currentTarget.value });
          }}
        />
        <NativeSelect
          label="Merge strategy"
          value={draft.mergeStrategy}
          data={[
            { value: '1', label: '1: append only (existing values are kept)' },
            { value: '2', label: '2: overwrite existing values' },
            { value: '3', label: '3: ignore the record for existing people' },
          ]}
          onChange={(event) => {
            set({ mergeStrategy: event.currentTarget.value });
          }}
        />
        <NativeSelect
          label="Find strategy"
          value={draft.findStrategy}
          data={[
            { value: '0', label: '0: the first merge key, then the second' },
            { value: '1', label: '1: the first merge key only' },
            { value: '2', label: '2: a person holding every merge key given' },
          ]}
          onChange={(event) => {
            set({ findStrategy: event.currentTarget.value });
          }}
        />
        <Group justify="flex-end">
          <Button type="submit" loading={saving}>
            {initial ? 'Save the changes' : 'Save the data source'}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
