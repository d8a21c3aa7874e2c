/** One change made through the console, as its audit log keeps it (who, what, when, from where). */
export interface AuditEntry {
  at: string;
  /** Who: the signed-in user's ID at the identity provider, and their email. */
  actor: { subject: string; email: string | null };
  /** What: `key.create`, `key.revoke`, … and what it was done to. */
  action: string;
  target: string;
  /** From where: the caller's address as API Gateway saw it. */
  source_ip: string;
  request_id: string;
  /** What else the change was (never a secret). */
  details: Record<string, string | number | boolean | null>;
}

/** Where entries are kept (the config table, `DynamoAuditLog`). */
export interface AuditSink {
  record(instanceId: string, entry: AuditEntry): Promise<void>;
}

/** Who made a change, from where: the signed-in user and their request. */
export interface ChangeAuthor {
  user: { subject: string; email: string | undefined };
  sourceIp: string;
  requestId: string;
}

/**
 * Records a change in the instance's audit log, before the change itself: a change is never
 * made without its entry (one that then fails keeps it, tied to the failed answer by the
 * request's ID).
 */
export function recordChange(
  audit: AuditSink,
  author: ChangeAuthor,
  instanceId: string,
  change: { action: string; target: string; details?: AuditEntry['details'] },
): Promise<void> {
  return audit.record(instanceId, {
    at: new Date().toISOString(),
    actor: { subject: author.user.subject, email: author.user.email ?? null },
    action: change.action,
    target: change.target,
    source_ip: author.sourceIp,
    request_id: author.requestId,
    details: change.details ?? {},
  });
}
