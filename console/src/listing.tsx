import { Button, Group, Table, TextInput } from '@mantine/core';
import { useState, type ReactNode } from 'react';

/**
 * What the console's listings share: pages followed by the API's `cursor_id` (each page costs
 * the same at any depth) or, for logs read newest first, by the marker each page gives; and a
 * table of people by email and name, each openable.
 */
export interface PagePosition {
  offset: number;
  cursor_id?: string;
}

/** The pages seen so far: the current one last, so going back needs no new position. */
export function useTrail<P>(first: P) {
  const [pages, setPages] = useState<P[]>([first]);
  return {
    current: pages.at(-1) ?? first,
    number: pages.length,
    next: (position: P) => {
      setPages([...pages, position]);
    },
    previous: () => {
      setPages(pages.slice(0, -1));
    },
    reset: () => {
      setPages([first]);
    },
  };
}

/** The pages of a listing by offset and cursor. */
export const usePages = () => useTrail<PagePosition>({ offset: 0 });

/**
 * "Newer" and "Older" for a log read newest first, each page after the marker the previous
 * one gave (`older`: the next page's marker, if there is an older page).
 */
export function NewerOlderButtons({
  what,
  trail,
  older,
}: {
  what: string;
  trail: ReturnType<typeof useTrail<string | undefined>>;
  older: string | null | undefined;
}) {
  return (
    <Group justify="space-between">
      <Button
        variant="default"
        disabled={trail.number < 2}
        onClick={() => {
          trail.previous();
        }}
      >
        Newer {what}
      </Button>
      <Button
        variant="default"
        disabled={!older}
        onClick={() => {
          if (older) trail.next(older);
        }}
      >
        Older {what}
      </Button>
    </Group>
  );
}

/** "Previous page" and "Next page" for a listing, named after what it lists. */
export function PageButtons({
  what,
  pages,
  answer,
}: {
  what: string;
  pages: ReturnType<typeof usePages>;
  answer: { next_offset: number; cursor_id?: string | undefined; has_more: boolean };
}) {
  return (
    <Group>
      <Button
        variant="default"
        disabled={pages.number <= 1}
        onClick={() => {
          pages.previous();
        }}
      >
        Previous page of {what}
      </Button>
      <Button
        variant="default"
        disabled={!answer.has_more || answer.cursor_id === undefined}
        onClick={() => {
          pages.next({
            offset: answer.next_offset,
            ...(answer.cursor_id ? { cursor_id: answer.cursor_id } : {}),
          });
        }}
      >
        Next page of {what}
      </Button>
    </Group>
  );
}

/** People by email and name, each with a button that opens their profile. */
export function PeopleTable({
  caption,
  contacts,
  onOpen,
}: {
  caption: string;
  contacts: readonly { id: string; fields?: Record<string, unknown> | undefined }[];
  onOpen: (personId: string) => void;
}) {
  return (
    <Table striped>
      <Table.Caption>{caption}</Table.Caption>
      <Table.Thead>
        <Table.Tr>
          <Table.Th scope="col">Email</Table.Th>
          <Table.Th scope="col">Name</Table.Th>
          <Table.Th scope="col">Profile</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {contacts.map((person) => {
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
                    onOpen(person.id);
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
  );
}

/**
 * A listing's search: a text box and its button; `onSearch` gets the words trimmed. Buttons
 * of the listing's own (a filter's) go beside them.
 */
export function SearchForm({
  label,
  description,
  submit = 'Search',
  role = 'search',
  onSearch,
  children,
}: {
  label: string;
  description?: string;
  submit?: string;
  /** `search` for a search; `undefined` for a form that narrows a log. */
  role?: 'search' | undefined;
  onSearch: (words: string) => void;
  children?: ReactNode;
}) {
  const [typed, setTyped] = useState('');
  return (
    <form
      role={role}
      onSubmit={(event) => {
        event.preventDefault();
        onSearch(typed.trim());
      }}
    >
      <Group align="flex-end">
        <TextInput
          label={label}
          description={description}
          value={typed}
          onChange={(event) => {
            setTyped(event.currentTarget.value);
          }}
        />
        <Button type="submit">{submit}</Button>
        {children}
      </Group>
    </form>
  );
}
