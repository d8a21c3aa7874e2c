import {
  Button,
  Checkbox,
  Code,
  Group,
  Modal,
  NativeSelect,
  Stack,
  Table,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useConsoleApi, type Activities, type Activity, useRefreshAfterChange } from '../api.ts';
import { Failure, Waiting } from '../status.tsx';
import type { ATTRIBUTE_KINDS } from '../../../shared/domain/instance-config.ts';

/**
 * The attribute kinds the form offers and the field type each stores its values as: the
 * configuration's own table (`ATTRIBUTE_KINDS`), which the type check holds this to; the
 * select and object kinds, which need options or a shape, are left to the API.
 */
const KINDS = {
  text: 'str',
  long_text: 'txt',
  number: 'int',
  decimal: 'int',
  currency: 'int',
  date: 'dtz',
  datetime: 'tme',
  boolean: 'bol',
  phone: 'phn',
  link: 'str',
  email: 'str',
} as const satisfies Partial<typeof ATTRIBUTE_KINDS>;
type Kind = keyof typeof KINDS;

const kebab = (name: string) =>
  name
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');

interface AttributeRow {
  name: string;
  kind: Kind;
  mapTo: string;
}

interface Draft {
  name: string;
  icon: string;
  displayText: string;
  attributes: AttributeRow[];
  conversionValue: boolean;
  trackAsTouch: boolean;
}

const EMPTY: Draft = {
  name: '',
  icon: '',
  displayText: '',
  attributes: [],
  conversionValue: false,
  trackAsTouch: false,
};

const attributeId = (row: AttributeRow) => `${KINDS[row.kind]}:cm:${kebab(row.name)}`;

function draftOf(activity: Activity): Draft {
  return {
    name: activity.name,
    icon: activity.icon ?? '',
    displayText: activity.display_text ?? '',
    attributes: activity.attributes.map((attribute) => ({
      name: attribute.name,
      kind: (attribute.kind ?? 'text') as Kind,
      mapTo: activity.map_to_crm?.[attribute.id] ?? '',
    })),
    conversionValue: activity.conversion_value,
    trackAsTouch: activity.track_as_touch,
  };
}

/** The definition the API takes, in the configuration file's shape. */
function definitionOf(draft: Draft, id: string) {
  const mapped = draft.attributes.filter((row) => row.mapTo !== '');
  return {
    id,
    name: draft.name.trim(),
    ...(draft.icon.trim() ? { icon: draft.icon.trim() } : {}),
    ...(draft.displayText.trim() ? { display_text: draft.displayText.trim() } : {}),
    attributes: draft.attributes.map((row) => ({
      id: attributeId(row),
      name: row.name.trim(),
      kind: row.kind,
    })),
    ...(mapped.length > 0
      ? { map_to_crm: Object.fromEntries(mapped.map((row) => [attributeId(row), row.mapTo])) }
      : {}),
    conversion_value: draft.conversionValue,
    track_as_touch: draft.trackAsTouch,
  };
}

function ActivityForm({
  initial,
  id,
  personFields,
  saving,
  onSave,
}: {
  initial: Draft;
  /** The definition's ID when it is edited; else made from its name. */
  id: string | undefined;
  personFields: { id: string; name: string }[];
  saving: boolean;
  onSave: (definition: ReturnType<typeof definitionOf>) => void;
}) {
  const [draft, setDraft] = useState(initial);
  const set = (change: Partial<Draft>) => {
    setDraft((current) => ({ ...current, ...change }));
  };
  const setRow = (index: number, change: Partial<AttributeRow>) => {
    set({
      attributes: draft.attributes.map((row, i) => (i === index ? { ...row, ...change } : row)),
    });
  };
  const definitionId = id ?? `act:cm:${kebab(draft.name)}`;
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        onSave(definitionOf(draft, definitionId));
      }}
    >
      <Stack>
        <TextInput
          label="Name"
          required
          value={draft.name}
          onChange={(event) => {
            set({ name: event.currentTarget.value });
          }}
          description={`Its ID: ${definitionId}`}
        />
        <TextInput
          label="Icon"
          value={draft.icon}
          onChange={(event) => {
            set({ icon: event.currentTarget.value });
          }}
        />
        <Textarea
          label="Display text"
          description="How the timeline shows it; {{attribute.<name>}} is an attribute's value"
          value={draft.displayText}
          onChange={(event) => {
            set({ displayText: event.currentTarget.value });
          }}
        />
        <Title order={3}>Attributes</Title>
        {draft.attributes.map((row, index) => (
          <Group key={index} align="flex-end">
            <TextInput
              label={`Attribute ${index + 1} name`}
              required
              value={row.name}
              onChange={(event) => {
                setRow(index, { name: event.currentTarget.value });
              }}
              description={`{{attribute.${kebab(row.name)}}}`}
            />
            <NativeSelect
              label={`Attribute ${index + 1} type`}
              value={row.kind}
              data={Object.keys(KINDS)}
              onChange={(event) => {
                setRow(index, { kind: event.currentTarget.value as Kind });
              }}
            />
            <NativeSelect
              label={`Attribute ${index + 1} maps to`}
              value={row.mapTo}
              data={[
                { value: '', label: 'no person field' },
                ...personFields.map((field) => ({ value: field.id, label: field.name })),
              ]}
              onChange={(event) => {
                setRow(index, { mapTo: event.currentTarget.value });
              }}
            />
            <Button
              variant="default"
              onClick={() => {
                set({ attributes: draft.attributes.filter((_, i) => i !== index) });
              }}
            >
              Remove attribute {index + 1}
            </Button>
          </Group>
        ))}
        <Button
          variant="default"
          onClick={() => {
            set({ attributes: [...draft.attributes, { name: '', kind: 'text', mapTo: '' }] });
          }}
        >
          Add an attribute
        </Button>
        <Checkbox
          label="Conversion value (its int::v attribute counts as revenue)"
          checked={draft.conversionValue}
          onChange={(event) => {
            set({ conversionValue: event.currentTarget.checked });
          }}
        />
        <Checkbox
          label="Track as a touch (updates the person's last seen)"
          checked={draft.trackAsTouch}
          onChange={(event) => {
            set({ trackAsTouch: event.currentTarget.checked });
          }}
        />
        <Group justify="flex-end">
          <Button type="submit" loading={saving}>
            Save the activity
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** An instance's activity definitions: define one, change one, archive one. */
export function ActivitiesPage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const activities = useQuery({
    queryKey: ['activities', instanceId],
    queryFn: () => api<Activities>('POST', 'activities/get', { instance_id: instanceId }),
  });
  const [editing, setEditing] = useState<Activity | 'new' | undefined>();
  const refresh = useRefreshAfterChange(instanceId);
  const changed = () => refresh(['activities', instanceId]);
  const save = useMutation({
    mutationFn: (definition: ReturnType<typeof definitionOf>) =>
      api<{ activity: Activity }>(
        editing === 'new' ? 'POST' : 'PUT',
        editing === 'new' ? 'activities/create' : 'activities/modify',
        { instance_id: instanceId, definition },
      ),
    onSuccess: async () => {
      setEditing(undefined);
      await changed();
    },
  });
  const archive = useMutation({
    mutationFn: (id: string) =>
      api<{ archived_activity: string }>('PUT', 'activities/archive', {
        instance_id: instanceId,
        activity_field_id: id,
      }),
    onSuccess: changed,
  });

  if (activities.isPending) return <Waiting what="Loading the activity definitions" />;
  if (activities.error) {
    return <Failure title="The activity definitions could not load" error={activities.error} />;
  }
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Activity definitions</Title>
        <Button
          onClick={() => {
            setEditing('new');
          }}
        >
          Define an activity
        </Button>
      </Group>
      {archive.error && <Failure title="The definition was not archived" error={archive.error} />}
      <Table striped>
        <Table.Caption>The instance&apos;s custom activities</Table.Caption>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Name</Table.Th>
            <Table.Th scope="col">Display text</Table.Th>
            <Table.Th scope="col">Attributes</Table.Th>
            <Table.Th scope="col">State</Table.Th>
            <Table.Th scope="col">Actions</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {activities.data.activities.map((activity) => (
            <Table.Tr key={activity.id}>
              <Table.Td>
                {activity.name} <Code>{activity.id}</Code>
              </Table.Td>
              <Table.Td>{activity.display_text ?? '—'}</Table.Td>
              <Table.Td>
                {activity.attributes
                  .map((attribute) => `${attribute.name} (${attribute.kind ?? 'text'})`)
                  .join(', ') || '—'}
              </Table.Td>
              <Table.Td>{activity.archived_at ? 'archived' : 'active'}</Table.Td>
              <Table.Td>
                {!activity.archived_at && (
                  <Group gap="xs">
                    <Button
                      size="xs"
                      variant="default"
                      onClick={() => {
                        setEditing(activity);
                      }}
                    >
                      Edit {activity.name}
                    </Button>
                    <Button
                      size="xs"
                      variant="default"
                      loading={archive.isPending && archive.variables === activity.id}
                      onClick={() => {
                        archive.mutate(activity.id);
                      }}
                    >
                      Archive {activity.name}
                    </Button>
                  </Group>
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Modal
        opened={editing !== undefined}
        onClose={() => {
          setEditing(undefined);
          save.reset();
        }}
        title={editing === 'new' ? 'Define an activity' : 'Change the activity'}
        size="xl"
        closeButtonProps={{ 'aria-label': 'Close' }}
        transitionProps={{ duration: 0 }}
      >
        {save.error && <Failure title="The activity was not saved" error={save.error} />}
        {editing !== undefined && (
          <ActivityForm
            initial={editing === 'new' ? EMPTY : draftOf(editing)}
            id={editing === 'new' ? undefined : editing.id}
            personFields={activities.data.person_fields}
            saving={save.isPending}
            onSave={(definition) => {
              save.mutate(definition);
            }}
          />
        )}
      </Modal>
    </Stack>
  );
}
