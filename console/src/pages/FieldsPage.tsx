import {
  Button,
  Checkbox,
  Code,
  Group,
  List,
  Modal,
  NativeSelect,
  Stack,
  Table,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import {
  useConsoleApi,
  type CustomField,
  type FieldChanged,
  type Fields,
  useRefreshAfterChange,
} from '../api.ts';
import { Failure, Waiting } from '../status.tsx';
import {
  customFieldId,
  DISPLAY_TYPE_NAMES,
  DISPLAY_TYPES,
  displayTypeRule,
  kebabName,
  trackingRefusal,
  type CustomFieldKind,
  type DisplayType,
} from '../../../shared/domain/fields/display-types.ts';

type Kind = CustomFieldKind;

const isSelect = (type: string) => displayTypeRule(type)?.select === true;

const optionsOf = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

const KIND_LABELS: Record<Kind, string> = { person: 'People', organization: 'Organizations' };

/** A select field's options, one a line. */
function OptionsInput({ value, onChange }: { value: string; onChange: (text: string) => void }) {
  return (
    <Textarea
      label="Options, one a line"
      required
      autosize
      minRows={3}
      value={value}
      onChange={(event) => {
        onChange(event.currentTarget.value);
      }}
    />
  );
}

/** Whether a person field's changes are kept as activities. */
function TrackChanges({
  checked,
  onChange,
}: {
  checked: boolean;
  onChange: (checked: boolean) => void;
}) {
  return (
    <Checkbox
      label="Track changes (each change is kept as an activity on the person's timeline)"
      checked={checked}
      onChange={(event) => {
        onChange(event.currentTarget.checked);
      }}
    />
  );
}

function CreateForm({
  saving,
  onSave,
}: {
  saving: boolean;
  onSave: (body: Record<string, unknown>) => void;
}) {
  const [kind, setKind] = useState<Kind>('person');
  const [name, setName] = useState('');
  const [type, setType] = useState<DisplayType>('text');
  const [options, setOptions] = useState('');
  const [tracked, setTracked] = useState(false);
  const trackable = trackingRefusal(kind, type) === undefined;
  const id = customFieldId(kind, DISPLAY_TYPES[type], kebabName(name));
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        onSave({
          kind,
          name: name.trim(),
          type,
          ...(isSelect(type) ? { values: optionsOf(options) } : {}),
          ...(trackable && tracked ? { track_changes: true } : {}),
        });
      }}
    >
      <Stack>
        <NativeSelect
          label="A field of"
          value={kind}
          data={[
            { value: 'person', label: 'people' },
            { value: 'organization', label: 'organizations' },
          ]}
          onChange={(event) => {
            setKind(event.currentTarget.value as Kind);
          }}
        />
        <TextInput
          label="Name"
          required
          value={name}
          description={`Its field ID: ${id}`}
          onChange={(event) => {
            setName(event.currentTarget.value);
          }}
        />
        <NativeSelect
          label="Type"
          value={type}
          data={DISPLAY_TYPE_NAMES}
          onChange={(event) => {
            setType(event.currentTarget.value as DisplayType);
          }}
        />
        {isSelect(type) && <OptionsInput value={options} onChange={setOptions} />}
        {trackable && <TrackChanges checked={tracked} onChange={setTracked} />}
        <Group justify="flex-end">
          <Button type="submit" loading={saving}>
            Add the field
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function OptionsForm({
  field,
  kind,
  saving,
  onSave,
}: {
  field: CustomField;
  kind: Kind;
  saving: boolean;
  onSave: (body: Record<string, unknown>) => void;
}) {
  const [options, setOptions] = useState((field.values ?? []).join('\n'));
  const [tracked, setTracked] = useState(field.track_changes === true);
  const trackable = trackingRefusal(kind, field.display_type) === undefined;
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        onSave({
          kind,
          field_id: field.id,
          replace_values: optionsOf(options),
          ...(trackable && tracked !== field.track_changes ? { track_changes: tracked } : {}),
        });
      }}
    >
      <Stack>
        <Text>
          <Code>{field.id}</Code>: records keep the values they hold when an option is removed.
        </Text>
        <OptionsInput value={options} onChange={setOptions} />
        {trackable && <TrackChanges checked={tracked} onChange={setTracked} />}
        <Group justify="flex-end">
          <Button type="submit" loading={saving}>
            Save the options
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function FieldTable({
  kind,
  fields,
  onEdit,
}: {
  kind: Kind;
  fields: Fields['person'];
  onEdit: (field: CustomField) => void;
}) {
  return (
    <Stack gap="xs">
      <Title order={3}>{KIND_LABELS[kind]}</Title>
      {fields.fields.length === 0 ? (
        <Text>No custom fields of {KIND_LABELS[kind].toLowerCase()} yet.</Text>
      ) : (
        <Table striped>
          <Table.Caption>The custom fields of {KIND_LABELS[kind].toLowerCase()}</Table.Caption>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Field ID</Table.Th>
              <Table.Th scope="col">Type</Table.Th>
              <Table.Th scope="col">Options</Table.Th>
              <Table.Th scope="col">Properties</Table.Th>
              <Table.Th scope="col">Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {fields.fields.map((field) => (
              <Table.Tr key={field.id}>
                <Table.Th scope="row" fw={400}>
                  {field.name}
                </Table.Th>
                <Table.Td>
                  <Code>{field.id}</Code>
                </Table.Td>
                <Table.Td>{field.display_type}</Table.Td>
                <Table.Td>{field.values ? field.values.join(', ') : '—'}</Table.Td>
                <Table.Td>
                  {[
                    field.unique ? 'unique (a merge key)' : undefined,
                    field.track_changes ? 'changes tracked' : undefined,
                    field.source === 'api'
                      ? `made through the API or console${field.created_at ? `, ${field.created_at.slice(0, 10)}` : ''}`
                      : 'from the configuration file',
                  ]
                    .filter(Boolean)
                    .join('; ')}
                </Table.Td>
                <Table.Td>
                  {field.values && (
                    <Button
                      size="xs"
                      variant="default"
                      onClick={() => {
                        onEdit(field);
                      }}
                    >
                      Change the options of {field.name}
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {fields.deleted.length > 0 && (
        <>
          <Text size="sm">Deleted through the API (their IDs and names stay reserved):</Text>
          <List size="sm">
            {fields.deleted.map((field) => (
              <List.Item key={field.id}>
                <Code>{field.id}</Code>, deleted {field.deleted_at.slice(0, 10)}
              </List.Item>
            ))}
          </List>
        </>
      )}
    </Stack>
  );
}

/** An instance's custom fields of people and organizations: add one, change a select's options. */
export function FieldsPage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const refresh = useRefreshAfterChange(instanceId);
  const fields = useQuery({
    queryKey: ['fields', instanceId],
    queryFn: () => api<Fields>('POST', 'fields/get', { instance_id: instanceId }),
  });
  const [editing, setEditing] = useState<{ field: CustomField; kind: Kind } | 'new' | undefined>();
  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) =>
      api<FieldChanged>(
        editing === 'new' ? 'POST' : 'PUT',
        editing === 'new' ? 'fields/create' : 'fields/modify',
        { instance_id: instanceId, ...body },
      ),
    onSuccess: async () => {
      setEditing(undefined);
      await refresh(['fields', instanceId]);
    },
  });
  if (fields.isPending) return <Waiting what="Loading the custom fields" />;
  if (fields.error)
    return <Failure title="The custom fields could not load" error={fields.error} />;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Custom fields</Title>
        <Button
          onClick={() => {
            setEditing('new');
          }}
        >
          Add a field
        </Button>
      </Group>
      {(['person', 'organization'] as const).map((kind) => (
        <FieldTable
          key={kind}
          kind={kind}
          fields={fields.data[kind]}
          onEdit={(field) => {
            setEditing({ field, kind });
          }}
        />
      ))}
      <Modal
        opened={editing !== undefined}
        onClose={() => {
          setEditing(undefined);
          save.reset();
        }}
        title={
          editing === 'new' ? 'Add a custom field' : `Change the options of ${editing?.field.name}`
        }
        size="lg"
        closeButtonProps={{ 'aria-label': 'Close' }}
        transitionProps={{ duration: 0 }}
      >
        {save.error && <Failure title="The field was not saved" error={save.error} />}
        {editing === 'new' && (
          <CreateForm
            saving={save.isPending}
            onSave={(body) => {
              save.mutate(body);
            }}
          />
        )}
        {editing !== undefined && editing !== 'new' && (
          <OptionsForm
            field={editing.field}
            kind={editing.kind}
            saving={save.isPending}
            onSave={(body) => {
              save.mutate(body);
            }}
          />
        )}
      </Modal>
    </Stack>
  );
}
