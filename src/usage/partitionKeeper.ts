import type { Logger } from 'pino';
import type { Sql } from '../db/pg.js';
import type { Count } from '../metrics/cells.js';
import { keepPartitions, type PartitionPolicy } from './partitions.js';

/** How often the days are kept: hourly, so a missed pass or two still finds the next day made. */
export const KEEP_INTERVAL_MS = 3_600_000;
/** Today and the next two days: two days of passes may fail before a day is missing. */
export const DAYS_AHEAD = 3;
const START_WAIT_MS = 10_000;

/**
 * Runs keepPartitions at the worker's start and then every interval, beside the usage
 * worker (src/usage/worker.ts). A failed pass (Postgres down, a lock not granted in time) is
 * logged and tried again on the next; meanwhile rows of a missing day go to the DEFAULT
 * partition, so no insert fails, and a later pass moves them into their day.
 */
export class PartitionKeeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly retentionDays: number | null,
    private readonly log: Logger,
    private readonly dropped: Count,
    private readonly intervalMs = KEEP_INTERVAL_MS,
  ) {}

  /**
   * The first pass, awaited for at most START_WAIT_MS: the days exist before the worker
   * writes, and a Postgres that does not answer cannot hold the worker's start (rows go to
   * DEFAULT meanwhile; the pass goes on and ends in its own time).
   */
  async start(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.pass(), new Promise<void>((resolve) => { timer = setTimeout(resolve, START_WAIT_MS); })]);
    clearTimeout(timer);
    this.timer = setInterval(() => void this.pass(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One pass; never throws. */
  pass(): Promise<void> {
    if (this.running) return this.running; // one pass at a time in a process
    const policy: PartitionPolicy = { daysAhead: DAYS_AHEAD, retentionDays: this.retentionDays };
    this.running = keepPartitions(this.sql, policy).then((done) => {
      if (done.created.length > 0) this.log.info({ created: done.created }, 'usage partitions made');
      if (done.dropped.length > 0) {
        this.dropped.inc(done.dropped.length);
        this.log.info({ dropped: done.dropped, retentionDays: this.retentionDays }, 'usage partitions dropped (RETENTION_DAYS)');
      }
      if (done.inDefault > 0) {
        this.log.warn({ rows: done.inDefault }, 'usage rows in a DEFAULT partition: their day had no partition (a clock far off?); the next pass that makes their day moves them');
      }
    }, (err: unknown) => {
      this.log.warn({ err }, 'usage partitions: pass failed, tried again on the next');
    }).finally(() => { this.running = null; });
    return this.running;
  }
}
