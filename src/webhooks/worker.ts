import type { Logger } from 'pino';
import type { WebhookConfig } from '../config/webhooks.js';
import type { Sql } from '../db/pg.js';
import { scanExpiring } from './expiring.js';
import { WebhookOutbox, type ClaimedEvent } from './outbox.js';
import { sendWebhook, type Attempt } from './send.js';

/**
 * A claim owns its row for this much longer than the attempt may take, so a worker that
 * is alive always records the outcome first; one that died leaves the row to the others.
 */
const LEASE_MARGIN_MS = 10_000;

function hostOf(url: string): string | null {
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
}

/** A wait that can be cut short; cut short before it begins, it does not begin. */
class Pause {
  private wake: (() => void) | null = null;
  private woken = false;

  for(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.end(), ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  end(): void {
    if (this.wake) this.wake();
    else this.woken = true;
  }
}

/** The wait before attempt `attempt + 1`: doubling from backoffMs up to backoffMaxMs, the upper half drawn at random. */
export function backoffMs(config: Pick<WebhookConfig, 'backoffMs' | 'backoffMaxMs'>, attempt: number): number {
  const full = Math.min(config.backoffMaxMs, config.backoffMs * 2 ** Math.min(attempt - 1, 40));
  return Math.round(full / 2 + Math.random() * (full / 2));
}

/**
 * Sends the outbox's webhooks, beside the usage worker and never in its way: its own
 * Postgres connections, its own loops, at most `concurrency` requests in flight, and
 * nothing the usage worker waits for. Also scans for licenses about to expire (at start,
 * then every scanIntervalMs). Several workers may run at once: each event is claimed by
 * one (src/webhooks/outbox.ts).
 */
export class WebhookWorker {
  private running = false;
  private readonly outbox: WebhookOutbox;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly deliveryPause = new Pause();
  private readonly scanPause = new Pause();
  private loops: Promise<void>[] = [];

  /** sql: a pool of the worker's own, closed by stop() */
  constructor(
    private readonly sql: Sql,
    private readonly config: WebhookConfig,
    private readonly log: Logger,
  ) {
    this.outbox = new WebhookOutbox(sql);
  }

  start(): void {
    this.running = true;
    this.loops = [this.deliver(), this.scan()];
  }

  /**
   * Claims nothing more and waits for the attempts in flight, for at most timeoutMs; those
   * still waiting then are aborted unrecorded (their rows come due again when the claim's
   * lease lapses, and another worker sends them).
   */
  async stop(timeoutMs: number): Promise<void> {
    this.running = false;
    this.deliveryPause.end();
    this.scanPause.end();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs); });
    await Promise.race([Promise.all([...this.loops, ...this.inFlight]), deadline]);
    clearTimeout(timer);
    this.stopping.abort();
    await Promise.race([Promise.all(this.inFlight), new Promise((resolve) => setTimeout(resolve, 500).unref())]);
    await this.sql.end({ timeout: 1 }).catch(() => {});
  }

  private async deliver(): Promise<void> {
    const leaseMs = this.config.timeoutMs + LEASE_MARGIN_MS;
    let failures = 0;
    while (this.running) {
      const free = this.config.concurrency - this.inFlight.size;
      let claimed: ClaimedEvent[] = [];
      if (free > 0) {
        try {
          claimed = await this.outbox.claim(free, leaseMs);
          failures = 0;
        } catch (err) {
          // Postgres away: ask less often the longer it stays away (at most every 30 s)
          if (failures++ === 0) this.log.warn({ err }, 'webhooks: cannot claim events, will retry');
          await this.deliveryPause.for(Math.min(30_000, this.config.pollMs * 2 ** Math.min(failures, 15)));
          continue;
        }
      }
      for (const event of claimed) {
        const attempt = this.attempt(event).finally(() => {
          this.inFlight.delete(attempt);
          this.deliveryPause.end(); // a slot is free: more may be due
        });
        this.inFlight.add(attempt);
      }
      // every slot taken, or as many due as asked for (more may be waiting): go on once one frees
      if (!this.running) break;
      await this.deliveryPause.for(free === 0 || claimed.length === free ? this.config.timeoutMs : this.config.pollMs);
    }
  }

  private async attempt(event: ClaimedEvent): Promise<void> {
    const { url, secret } = event;
    const outcome: Attempt = url === null || secret === null
      ? { ok: false, status: null, error: 'the license has no webhook URL any more' }
      : await sendWebhook({ ...event, url, secret }, this.config.timeoutMs, this.stopping.signal, { policy: this.config });
    if (this.stopping.signal.aborted && !outcome.ok) return; // unrecorded: the lease lapses, another worker sends it
    try {
      if (outcome.ok) {
        await this.outbox.delivered(event, outcome.status);
        this.log.debug({ webhook: event.id, type: event.type, attempt: event.attempt }, 'webhook delivered');
        return;
      }
      // a target the policy refuses stays refused on a retry: failed for good at once (replayable once it is fixed)
      const last = event.attempt >= this.config.maxAttempts || url === null || outcome.permanent === true;
      await this.outbox.attemptFailed(event, outcome.status, outcome.error, last ? null : backoffMs(this.config, event.attempt));
      // where it went by scheme and host only: a URL's path or query may hold a receiver's token
      const to = url === null ? null : hostOf(url);
      this.log.warn({ webhook: event.id, type: event.type, attempt: event.attempt, to, status: outcome.status, error: outcome.error },
        last ? 'webhook failed for good: kept, replay with npm run webhook-events -- replay' : 'webhook attempt failed, will retry');
    } catch (err) {
      // the outcome is lost, not the event: its lease lapses and it is sent again
      this.log.warn({ err, webhook: event.id }, 'webhooks: cannot record an attempt');
    }
  }

  private async scan(): Promise<void> {
    while (this.running) {
      try {
        const found = await scanExpiring(this.sql, this.config.expiringDays);
        if (found > 0) this.deliveryPause.end();
      } catch (err) {
        this.log.warn({ err }, 'webhooks: expiry scan failed, will retry');
      }
      if (!this.running) break;
      await this.scanPause.for(this.config.scanIntervalMs);
    }
  }
}
