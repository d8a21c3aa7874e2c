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
