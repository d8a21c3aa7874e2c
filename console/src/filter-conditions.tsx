import { Button, Code, Group, NativeSelect, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import type { FilterField } from './api.ts';
import { composeFilter, type Combinator, type DraftCondition } from './filter-builder.ts';

/**
 * The filter builder the audiences and people pages share: conditions on the instance's
 * fields with the operators that read each field's type (as the console's API offers them),
 * combined with "and" or "or", and the filter they make in the API's language, shown as it is
 * sent. The server checks it with the public API's parser.
 */
/** A new condition on a field: its first operator, no value yet. */
function conditionOn(field: FilterField): DraftCondition {
  const first = field.operators[0];
  return {
    field_id: field.id,
    operator: first?.operator ?? '$has_any_value',
    kind: first?.kind ?? 'none',
    value: first?.kind === 'boolean' ? 'true' : '',
    value2: '',
  };
}

const VALUE_HINT: Partial<Record<DraftCondition['kind'], string>> = {
  date: 'A date such as 2026-01-31',
  'date-range': 'A date such as 2026-01-31',
  days: 'A whole number of days',
};

/** The value inputs of one condition, as its operator reads them. */
function ValueInputs({
  index,
  condition,
  onChange,
}: {
  index: number;
  condition: DraftCondition;
  onChange: (change: Partial<DraftCondition>) => void;
}) {
  const name = `Condition ${index + 1}`;
  switch (condition.kind) {
    case 'none':
      return null;
    case 'boolean':
      return (
        <NativeSelect
          label={`${name} value`}
          value={condition.value}
          data={[
            { value: 'true', label: 'true' },
            { value: 'false', label: 'false' },
          ]}
          onChange={(event) => {
            onChange({ value: event.currentTarget.value });
          }}
        />
      );
    case 'number-range':
    case 'date-range':
      return (
        <>
          <TextInput
            label={`${name} from`}
            description={VALUE_HINT[condition.kind]}
            value={condition.value}
            onChange={(event) => {
              onChange({ value: event.currentTarget.value });
            }}
          />
          <TextInput
            label={`${name} to`}
            description={VALUE_HINT[condition.kind]}
            value={condition.value2}
            onChange={(event) => {
              onChange({ value2: event.currentTarget.value });
            }}
          />
        </>
      );
    default:
      return (
        <TextInput
          label={condition.kind === 'days' ? `${name} days ago` : `${name} value`}
          description={VALUE_HINT[condition.kind]}
          value={condition.value}
          onChange={(event) => {
            onChange({ value: event.currentTarget.value });
          }}
        />
      );
  }
}

/** The conditions being built and the filter they make. */
export function useFilterDraft(fields: readonly FilterField[]) {
  const byId = new Map(fields.map((field) => [field.id, field]));
  const starting = byId.get('str::email') ?? fields[0];
  const [combinator, setCombinator] = useState<Combinator>('and');
  const [conditions, setConditions] = useState<DraftCondition[]>(
    starting ? [conditionOn(starting)] : [],
  );
  return {
    fields,
    byId,
    starting,
    combinator,
    setCombinator,
    conditions,
    setConditions,
    filter: composeFilter(combinator, conditions),
  };
}

/** The conditions of a draft, each editable and removable, and the filter they make. */
export function FilterConditions({
  draft,
  matchLabel,
}: {
  draft: ReturnType<typeof useFilterDraft>;
  matchLabel: string;
}) {
  const { fields, byId, starting, combinator, setCombinator, conditions, setConditions, filter } =
    draft;
  const change = (index: number, next: Partial<DraftCondition>) => {
    setConditions(conditions.map((row, i) => (i === index ? { ...row, ...next } : row)));
  };
  return (
    <>
      <NativeSelect
        label={matchLabel}
        value={combinator}
        data={[
          { value: 'and', label: 'every condition (and)' },
          { value: 'or', label: 'any condition (or)' },
        ]}
        onChange={(event) => {
          setCombinator(event.currentTarget.value as Combinator);
        }}
      />
      <Title order={3}>Conditions</Title>
      {conditions.map((condition, index) => {
        const field = byId.get(condition.field_id);
        return (
          <Group key={index} align="flex-end">
            <NativeSelect
              label={`Condition ${index + 1} field`}
              value={condition.field_id}
              data={fields.map((option) => ({
                value: option.id,
                label: `${option.label} (${option.id})`,
              }))}
              onChange={(event) => {
                const picked = byId.get(event.currentTarget.value);
                if (picked) change(index, conditionOn(picked));
              }}
            />
            <NativeSelect
              label={`Condition ${index + 1} operator`}
              value={condition.operator}
              data={(field?.operators ?? []).map((option) => ({
                value: option.operator,
                label: option.label,
              }))}
              onChange={(event) => {
                const picked = field?.operators.find(
                  (option) => option.operator === event.currentTarget.value,
                );
                if (picked) {
                  change(index, {
                    operator: picked.operator,
                    kind: picked.kind,
                    value: picked.kind === 'boolean' ? 'true' : '',
                    value2: '',
                  });
                }
              }}
            />
            <ValueInputs
              index={index}
              condition={condition}
              onChange={(next) => {
                change(index, next);
              }}
            />
            <Button
              variant="default"
              disabled={conditions.length === 1}
              onClick={() => {
                setConditions(conditions.filter((_, i) => i !== index));
              }}
            >
              Remove condition {index + 1}
            </Button>
          </Group>
        );
      })}
      <Button
        variant="default"
        disabled={!starting}
        onClick={() => {
          if (starting) setConditions([...conditions, conditionOn(starting)]);
        }}
      >
        Add a condition
      </Button>
      <Title order={3}>Filter</Title>
      <Code block data-testid="filter-json" aria-label="The filter as the API takes it">
        {JSON.stringify(filter, null, 2)}
      </Code>
    </>
  );
}
