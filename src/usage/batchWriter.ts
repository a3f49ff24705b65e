import type { Logger } from 'pino';
import type { Sql } from '../db/pg.js';
import type { Count } from '../metrics/cells.js';
import type { Metrics } from '../metrics/registry.js';
import type { RedisClient } from '../redis/client.js';
import type { KeySpace } from '../redis/keys.js';
import { acknowledge } from './ack.js';
import { isPermanent, type DeadLetters, type Refused as RefusedEvent } from './deadLetters.js';
import type { UsageEvent } from './events.js';
import { persistBatch, type UsedCounts } from './persist.js';
import { firmaOf, secondRedemptions } from './secondRedemptions.js';

// What the usage worker does with a batch it has read: Postgres first, then the dead
// letters, then the acknowledgement (src/usage/ack.ts). One concern: that order is what
// loses no event, since an event leaves the streams only once it is committed or buried;
// the reading and its pace are src/usage/worker.ts.

type Refused = RefusedEvent<UsageEvent>;

/** What the writer asks of the loop that drives it (src/usage/worker.ts). */
export interface WriterLoop {
  /** false once stopping: a transient failure is then retried a few times only */
  running(): boolean;
  /** a pause that a stop cuts short */
  sleep(ms: number): Promise<void>;
}

export class BatchWriter {
  private readonly written: Count;
  private readonly deadLettered: Count;
  private readonly secondRedemptions: Count;

  /** options: read at each write, as the worker's own; metrics: where events and failures are counted */
  constructor(
    private readonly redis: RedisClient,
    private readonly sql: Sql,
    private readonly keys: KeySpace,
    private readonly deadLetters: DeadLetters,
    private readonly options: { readonly quotaLowPercent?: number },
    private readonly log: Logger,
    private readonly metrics: Metrics,
    private readonly loop: WriterLoop,
  ) {
    this.written = metrics.usageWritten.series({});
    this.deadLettered = metrics.usageDeadLettered.series({});
    this.secondRedemptions = metrics.usageSecondRedemptions.series({});
  }

  /**
   * Persists a batch, then acknowledges it. Transient failures are retried (while
   * stopping, a few times, then the batch stays pending for the next worker). When
   * Postgres refuses the batch for good, it is halved until each refused event stands
   * alone: every other event is written and each refused one becomes a dead letter, so
   * no batch is retried forever and no event is dropped unrecorded.
   */
  async flush(events: UsageEvent[]): Promise<void> {
    const writable = events.filter((e) => e.kind !== 'bad' && e.kind !== 'gone');
    const counts: UsedCounts = new Map();
    const seconds: Refused[] = [];
    const refusedByPostgres = await this.persistIsolating(writable, counts, seconds);
    const refused: Refused[] = events
      .filter((e) => e.kind === 'bad')
      .map((event) => ({ event, error: 'malformed usage event', code: 'BAD_EVENT' }));
    refused.push(...refusedByPostgres);
    const rebuild = new Set<string>();
    for (const second of seconds) {
      rebuild.add(firmaOf(second));
      this.log.error({ stream: second.event.stream, id: second.event.id, error: second.error },
        'a second redemption of one token reached Postgres: not counted, kept as a dead letter, the license\'s Redis copy rebuilt');
    }
    this.secondRedemptions.inc(seconds.length);
    refused.push(...seconds);
    if (refused.length > 0) {
      this.deadLettered.inc(await this.deadLetters.bury(refused));
      for (const { event, error, code } of refused) {
        this.log.warn({ stream: event.stream, id: event.id, code, error }, 'usage event refused for good: moved to dead letters');
      }
    }
    await acknowledge(this.redis, this.keys, events, counts, rebuild);
    this.written.inc(writable.length - refusedByPostgres.length - seconds.length);
  }

  private async persistIsolating(events: UsageEvent[], counts: UsedCounts, seconds: Refused[]): Promise<Refused[]> {
    if (events.length === 0) return [];
    try {
      await this.persistRetrying(events, counts, seconds);
      return [];
    } catch (err) {
      if (!isPermanent(err)) throw err;
      if (events.length === 1) {
        const e = err as Error & { code: string };
        return [{ event: events[0] as UsageEvent, error: e.message, code: e.code }];
      }
      const half = events.length >> 1;
      return [...await this.persistIsolating(events.slice(0, half), counts, seconds), ...await this.persistIsolating(events.slice(half), counts, seconds)];
    }
  }

  /** Retries transient failures with backoff; throws a permanent one at once. */
  private async persistRetrying(events: UsageEvent[], counts: UsedCounts, seconds: Refused[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const written = await persistBatch(this.sql, events, this.options.quotaLowPercent);
        for (const [firmaId, c] of written.counts) {
          const before = counts.get(firmaId);
          counts.set(firmaId, before === undefined ? c
            : { counted: Math.max(c.counted, before.counted), released: Math.max(c.released, before.released) });
        }
        // committed: a failure from here on sends the batch again, which inserts nothing more and finds the same
        seconds.push(...await secondRedemptions(this.sql, events, written.redemptionsInserted));
        return;
      } catch (err) {
        if (isPermanent(err) || (!this.loop.running() && attempt >= 3)) throw err;
        this.metrics.dependencyError(err, 'worker');
        this.log.warn({ err, events: events.length }, 'usage worker: Postgres write failed, retrying');
        await this.loop.sleep(Math.min(100 * 2 ** attempt, 5000));
      }
    }
  }
}
