import type { Sql } from '../db/pg.js';

// The webhook outbox (sql/005_webhooks.sql) as the delivery loop and the operator see it.
// Rows are written where events happen (src/usage/persist.ts, src/webhooks/expiring.ts);
// here they are claimed, marked delivered or retried, marked failed, listed and replayed.

/** An event claimed for one delivery attempt, with where to send it now. */
export interface ClaimedEvent {
  eventKey: string;
  id: string;
  type: string;
  payload: Record<string, unknown>;
  createdAt: Date;
  /** this attempt's number (1 for the first) */
  attempt: number;
  /** the license's webhook now; null: removed since the event happened */
  url: string | null;
  secret: string | null;
}

/** A failed event as `npm run webhook-events -- list` shows it. */
export interface FailedEvent {
  id: string;
  eventKey: string;
  type: string;
  attempts: number;
  createdAt: Date;
  failedAt: Date;
  lastStatus: number | null;
  lastError: string | null;
}

/**
 * Due rows, locked with SKIP LOCKED so that workers claiming at once take different ones,
 * and moved past the attempt (next_attempt_at = now + lease) in the same statement: no
 * other worker claims them until this one has recorded the outcome, or has died and the
 * lease has lapsed. A row updated by another worker after this statement's snapshot is
 * checked again under its lock (no longer due: skipped).
 */
const CLAIM = `
  with due as (
    select event_key from webhook_events
    where delivered_at is null and failed_at is null and next_attempt_at <= now()
    order by next_attempt_at
    limit $1
    for update skip locked
  ), claimed as (
    update webhook_events w set attempts = w.attempts + 1, next_attempt_at = now() + $2::float8 * interval '1 millisecond'
    from due where w.event_key = due.event_key
    returning w.event_key, w.id, w.firma_id, w.type, w.payload, w.created_at, w.attempts
  )
  select c.*, l.webhook_url, l.webhook_secret from claimed c left join licenses l on l.firma_id = c.firma_id`;

export class WebhookOutbox {
  constructor(private readonly sql: Sql) {}

  /** Up to `max` due events, each owned by the caller for `leaseMs`. */
  async claim(max: number, leaseMs: number): Promise<ClaimedEvent[]> {
    const rows = await this.sql.unsafe(CLAIM, [max, leaseMs], { prepare: true });
    return rows.map((r) => ({
      eventKey: r.event_key as string,
      id: r.id as string,
      type: r.type as string,
      payload: r.payload as Record<string, unknown>,
      createdAt: r.created_at as Date,
      attempt: r.attempts as number,
      url: (r.webhook_url as string | null) ?? null,
      secret: (r.webhook_secret as string | null) ?? null,
    }));
  }

  /** Records a delivered attempt (unless a later claim owns the row: its outcome is the one that counts). */
  async delivered(event: ClaimedEvent, status: number): Promise<void> {
    await this.sql`
      update webhook_events set delivered_at = now(), last_status = ${status}, last_error = null
      where event_key = ${event.eventKey} and attempts = ${event.attempt} and delivered_at is null`;
  }

  /** Records a failed attempt: the next is due after retryInMs, or, with null, none is (failed for good). */
  async attemptFailed(event: ClaimedEvent, status: number | null, error: string, retryInMs: number | null): Promise<void> {
    await this.sql`
      update webhook_events set last_status = ${status}, last_error = ${error.slice(0, 500)},
        next_attempt_at = case when ${retryInMs}::float8 is null then next_attempt_at
                               else now() + ${retryInMs}::float8 * interval '1 millisecond' end,
        failed_at = case when ${retryInMs}::float8 is null then now() end
      where event_key = ${event.eventKey} and attempts = ${event.attempt} and delivered_at is null`;
  }

  /** Events by state: waiting (not yet delivered, retries left), delivered, failed. */
  async counts(): Promise<{ pending: number; delivered: number; failed: number }> {
    const [r] = await this.sql`
      select count(*) filter (where delivered_at is null and failed_at is null)::int as pending,
             count(*) filter (where delivered_at is not null)::int as delivered,
             count(*) filter (where failed_at is not null)::int as failed
      from webhook_events`;
    return { pending: r?.pending as number, delivered: r?.delivered as number, failed: r?.failed as number };
  }

  async failed(max = 10_000): Promise<FailedEvent[]> {
    const rows = await this.sql`
      select id, event_key, type, attempts, created_at, failed_at, last_status, last_error
      from webhook_events where failed_at is not null order by failed_at limit ${max}`;
    return rows.map((r) => ({
      id: r.id as string, eventKey: r.event_key as string, type: r.type as string, attempts: r.attempts as number,
      createdAt: r.created_at as Date, failedAt: r.failed_at as Date, lastStatus: r.last_status as number | null,
      lastError: r.last_error as string | null,
    }));
  }

  /**
   * Puts failed events (all, or those whose id or event key is given) back in line, due
   * now, with a fresh count of attempts; the running workers deliver them. Returns how many.
   */
  async replay(only: readonly string[] = []): Promise<number> {
    const rows = await this.sql`
      update webhook_events set failed_at = null, attempts = 0, next_attempt_at = now()
      where failed_at is not null
        and (${only.length === 0} or id::text = any(${only.map((id) => id.toLowerCase())}::text[]) or event_key = any(${only as string[]}::text[]))
      returning 1`;
    return rows.length;
  }
}
