/**
 * Emails sent, bounced and complained about, counted per instance and UTC day where the
 * events are applied (the email worker's acceptance, the SES events worker): each count is
 * written in the same transaction as the change it counts, under that change's own condition
 * (an email accepted once, an event recorded once per its key), so a redelivered message or
 * event never counts twice. The console's overview reads the last `TALLY_DAYS` days.
 */
export const EMAIL_TALLIES = ['sent', 'bounced', 'complained'] as const;
export type EmailTally = (typeof EMAIL_TALLIES)[number];

/** Days the overview sums (today included), and how long a day's counters are kept. */
export const TALLY_DAYS = 7;
export const TALLY_RETENTION_DAYS = 35;

/** The UTC day (`YYYY-MM-DD`) of an instant. */
export function tallyDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** The last `days` UTC days up to `now`'s, oldest first. */
export function lastDays(now: Date, days = TALLY_DAYS): string[] {
  return Array.from({ length: days }, (_, i) =>
    tallyDay(new Date(now.getTime() - (days - 1 - i) * 86_400_000)),
  );
}

export type EmailTotals = Record<EmailTally, number>;

/** What the emails' counters say of some days, summed. */
export interface EmailTallyReader {
  tallies(instanceId: string, days: readonly string[]): Promise<EmailTotals>;
}
