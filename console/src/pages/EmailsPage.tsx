import { Button, Modal, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useConsoleApi, type Email, type EmailPreview, type Emails } from '../api.ts';
import { NewerOlderButtons, SearchForm, useTrail } from '../listing.tsx';
import { Failure, Waiting } from '../status.tsx';

const when = (iso: string) => new Date(iso).toLocaleString();

/** What became of an email beyond its state: its bounce or complaint, or its error. */
function trouble(email: Email): string {
  if (email.bounce) return `Bounced (${email.bounce.detail ?? 'no detail'})`;
  if (email.complaint) return `Complaint (${email.complaint.detail ?? 'no detail'})`;
  return email.error ?? '—';
}

/**
 * One email's HTML as it was written, in a sandboxed frame: no scripts, no same origin, its
 * links not followed (the console's policy refuses framed navigation), no tracking pixel.
 */
function PreviewDialog({
  instanceId,
  messageId,
  onClose,
}: {
  instanceId: string;
  messageId: string | undefined;
  onClose: () => void;
}) {
  const api = useConsoleApi();
  const preview = useQuery({
    queryKey: ['email-preview', instanceId, messageId],
    enabled: messageId !== undefined,
    queryFn: () =>
      api<EmailPreview>('POST', 'emails/preview', {
        instance_id: instanceId,
        message_id: messageId,
      }),
  });
  const email = preview.data?.email;
  const body = preview.data?.html ?? null;
  return (
    <Modal
      closeButtonProps={{ 'aria-label': 'Close' }}
      transitionProps={{ duration: 0 }}
      opened={messageId !== undefined}
      onClose={onClose}
      size="xl"
      title={email ? `Email: ${email.subject ?? email.email_name}` : 'Email'}
    >
      {preview.isPending && <Waiting what="Loading the email" />}
      {preview.error && <Failure title="The email could not load" error={preview.error} />}
      {email && (
        <Stack>
          <Text size="sm">
            To {email.to}, {when(email.created_at)}: {email.status}. Links are shown as written and
            are not followed here.
          </Text>
          {body === null ? (
            <Text>
              This email&apos;s HTML is no longer kept (it is kept 30 days), or it was never built.
            </Text>
          ) : (
            <iframe
              title={`The HTML of the email to ${email.to}`}
              sandbox=""
              referrerPolicy="no-referrer"
              srcDoc={body}
              style={{
                width: '100%',
                height: '60vh',
                border: '1px solid #ccc',
                background: '#fff',
              }}
            />
          )}
        </Stack>
      )}
    </Modal>
  );
}

/** Emails in a table: recipient, subject, time, state, opens, clicks, bounce or complaint. */
export function EmailTable({
  instanceId,
  emails,
  caption,
}: {
  instanceId: string;
  emails: Email[];
  caption: string;
}) {
  const [previewing, setPreviewing] = useState<string | undefined>();
  return (
    <>
      <Table striped>
        <Table.Caption>{caption}</Table.Caption>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Sent</Table.Th>
            <Table.Th scope="col">To</Table.Th>
            <Table.Th scope="col">Subject</Table.Th>
            <Table.Th scope="col">State</Table.Th>
            <Table.Th scope="col">Opens</Table.Th>
            <Table.Th scope="col">Clicks</Table.Th>
            <Table.Th scope="col">Bounce or complaint</Table.Th>
            <Table.Th scope="col">Preview</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {emails.map((email) => (
            <Table.Tr key={email.message_id}>
              <Table.Td>{when(email.created_at)}</Table.Td>
              <Table.Td>{email.to}</Table.Td>
              <Table.Td>{email.subject ?? email.email_name}</Table.Td>
              <Table.Td>
                <Text span fw={700} size="sm">
                  {email.status}
                </Text>
              </Table.Td>
              <Table.Td>{email.opens}</Table.Td>
              <Table.Td>{email.clicks}</Table.Td>
              <Table.Td>{trouble(email)}</Table.Td>
              <Table.Td>
                <Button
                  size="xs"
                  variant="light"
                  aria-label={`Preview the email to ${email.to} of ${when(email.created_at)}`}
                  onClick={() => {
                    setPreviewing(email.message_id);
                  }}
                >
                  Preview
                </Button>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <PreviewDialog
        instanceId={instanceId}
        messageId={previewing}
        onClose={() => {
          setPreviewing(undefined);
        }}
      />
    </>
  );
}

/** The instance's transactional emails, newest first, a page at a time; one person's on demand. */
export function EmailsPage({ instanceId }: { instanceId: string }) {
  const api = useConsoleApi();
  const [personId, setPersonId] = useState('');
  // Each page after the `before` the previous one gave.
  const pages = useTrail<string | undefined>(undefined);
  const before = pages.current;
  const emails = useQuery({
    queryKey: ['emails', instanceId, personId, before],
    queryFn: () =>
      api<Emails>('POST', 'emails/get', {
        instance_id: instanceId,
        limit: 25,
        ...(personId ? { person_id: personId } : {}),
        ...(before ? { before } : {}),
      }),
  });
  return (
    <Stack>
      <Title order={2}>Transactional emails</Title>
      <SearchForm
        label="Only the emails of a person (their ID)"
        description="24 hexadecimal characters; empty for every email"
        submit="Show"
        role={undefined}
        onSearch={(words) => {
          setPersonId(words);
          pages.reset();
        }}
      />
      {emails.isPending && <Waiting what="Loading the emails" />}
      {emails.error && <Failure title="The emails could not load" error={emails.error} />}
      {emails.data &&
        (emails.data.emails.length === 0 ? (
          <Text>No email here.</Text>
        ) : (
          <EmailTable
            instanceId={instanceId}
            emails={emails.data.emails}
            caption={personId ? `Emails sent to ${personId}, newest first` : 'Newest first'}
          />
        ))}
      <NewerOlderButtons what="emails" trail={pages} older={emails.data?.next} />
    </Stack>
  );
}
