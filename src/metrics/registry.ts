import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { Recovery } from '../redis/restarts.js';
import { CounterFamily, HistogramFamily, type Count } from './cells.js';
import { dependencyOf } from './errors.js';
import { metricsJson, type MetricJson } from './merge.js';

// The service's metrics (GET /metrics), in registries of their own (never prom-client's
// global one), built once at start (src/service.ts) and handed to what records. Names:
// license_ prefix, _total counters, _seconds durations (Prometheus's conventions). Labels
// are bounded by construction: route patterns, never paths (a license key in a label would
// leak it and grow without end); outcomes and statuses from fixed tables.
//
// Three registries, by how several processes of one instance (WORKERS) add up
// (src/metrics/instance.ts): what this process counts, summed over the processes; Node's
// own figures of this process, one series per process (labelled by child); and the usage
// gauges read from Redis, which are the instance's already and are read once per scrape.

/** Answers of this service take well under a millisecond; a hung dependency, up to a second (REDIS_COMMAND_TIMEOUT_MS). */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** A usage batch: one Postgres statement and one acknowledgement, milliseconds; seconds while Postgres struggles. */
const BATCH_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** How long a scrape waits for Redis (the backlog gauges) and for each process of the instance: a hung Redis or process must not hang /metrics. */
export const SCRAPE_TIMEOUT_MS = 1_000;

/** Where a Redis or Postgres error was met. */
export type ErrorSource = 'request' | 'worker' | 'connection' | 'scrape';

/** What the usage gauges read from Redis at scrape time. */
export interface UsageState {
  /** events in the usage streams, not yet in Postgres */
  backlog: number;
  /** how long the oldest of them has waited, ms */
  lagMs: number;
  /** events Postgres refused for good, waiting for a replay */
  deadLetters: number;
}

/** What a process of an instance reports to the primary (src/metrics/instance.ts). */
export interface ProcessReport {
  /** what this process counted and its hasher queue: summed over the processes */
  summed: MetricJson[];
  /** Node's figures of this process (process_, nodejs_): one series per process */
  perProcess: MetricJson[];
}

export class Metrics {
  /** what this process counts (and its hasher queue) */
  private readonly counted = new Registry();
  /** Node's figures of this process */
  private readonly node = new Registry();
  /** read from Redis at scrape time: the instance's figures whichever process reads them */
  private readonly fromRedis = new Registry();
  readonly contentType = this.counted.contentType;

  // ---- the HTTP layer (src/http/answer.ts), one place for every answer ----
  readonly httpRequests: CounterFamily;
  readonly httpDuration: HistogramFamily;

  // ---- the use cases ----
  readonly validateOutcomes: CounterFamily;
  readonly signOutcomes: CounterFamily;
  readonly tokensIssued: CounterFamily;
  readonly licenseTokensIssued: CounterFamily;

  // ---- dependencies ----
  readonly redisErrors: CounterFamily;
  readonly postgresErrors: CounterFamily;
  readonly redisRecoveries: CounterFamily;
  readonly redisRecoveredBuckets: CounterFamily;

  // ---- the usage worker of this process (absent when it runs elsewhere: RUN_WORKER=0) ----
  readonly usageWritten: CounterFamily;
  readonly usageDeadLettered: CounterFamily;
  readonly usageSecondRedemptions: CounterFamily;
  readonly usageBatchDuration: HistogramFamily;
  readonly usagePartitionsDropped: CounterFamily;

  private readonly errorSeries = new Map<string, Count>();
  private usageRead: Promise<UsageState | null> | null = null;

  /** enabled false (METRICS=0): every series is a no-op and nothing is timed. */
  constructor(readonly enabled: boolean) {
    this.httpRequests = this.counter('license_http_requests_total',
      'Answers by method, route pattern (unmatched: a path no route serves) and status, the HTTP layer\'s own (404, 405, 413, 503) included');
    this.httpDuration = this.histogram('license_http_request_duration_seconds',
      'Time from a request\'s arrival to its answer, by method and route pattern', LATENCY_BUCKETS);
    this.validateOutcomes = this.counter('license_validate_outcomes_total',
      'Answers of validate by outcome: redeemed (Idempotency-Key replays included), already_used, token_expired, origin_refused, quota_exhausted, rate_limited...');
    this.signOutcomes = this.counter('license_signature_sign_outcomes_total',
      'Answers of POST /api/Signature/sign by outcome, as license_validate_outcomes_total counts validate\'s');
    this.tokensIssued = this.counter('license_sign_tokens_issued_total', 'Sign tokens issued, by route (get-token, sign-token) and imza_tipi');
    this.licenseTokensIssued = this.counter('license_license_tokens_issued_total', 'License tokens (EdDSA JWS) issued by license validation (POST /api/License/validate with a key and password)');
    this.redisErrors = this.counter('license_redis_errors_total',
      'Redis errors (refusals, timeouts, closed connections) by where they were met: request, worker, connection (reconnection attempts), scrape');
    this.postgresErrors = this.counter('license_postgres_errors_total', 'Postgres errors (refusals, timeouts, lost connections) by where they were met: request, worker');
    this.redisRecoveries = this.counter('license_redis_recoveries_total',
      'Redis processes this process found new (a promoted replica, a restarted server: src/redis/restarts.ts) and recovered, by what it did there: ' +
      'fenced (epochs raised, outstanding tokens refused, license copies rebuilt), moved (buckets that arrived whole: a resharding, an upgrade), joined (another process had done it)');
    this.redisRecoveredBuckets = this.counter('license_redis_recovered_buckets_total',
      'What this process did on new Redis processes, by what: epoch_raised (buckets whose tokens issued before are refused as used), copy_dropped (license copies rebuilt)');
    this.usageWritten = this.counter('license_usage_events_written_total', 'Usage events this process\'s worker wrote to Postgres');
    this.usageDeadLettered = this.counter('license_usage_dead_lettered_total', 'Usage events this process\'s worker moved to the dead letters (refused by Postgres for good)');
    this.usageSecondRedemptions = this.counter('license_usage_second_redemptions_total',
      'Redemptions of a token redeemed before that reached Postgres (never expected: alert on any). Not counted there, kept as dead letters (code SECOND_REDEMPTION), the license\'s Redis copy rebuilt');
    this.usagePartitionsDropped = this.counter('license_usage_partitions_dropped_total', 'Day partitions of token_issues and token_redemptions this process\'s worker dropped (RETENTION_DAYS)');
    this.usageBatchDuration = this.histogram('license_usage_batch_duration_seconds',
      'Time this process\'s worker took to write a batch to Postgres and acknowledge it', BATCH_BUCKETS);
    // bound at start, so each shows 0 until its first error (a rate over a series that appears with its first error misses that one)
    for (const source of ['request', 'worker', 'connection', 'scrape'] as const) this.errorSeries.set(`redis ${source}`, this.redisErrors.series({ source }));
    for (const source of ['request', 'worker'] as const) this.errorSeries.set(`postgres ${source}`, this.postgresErrors.series({ source }));
  }

  /** Counts a recovery of a new Redis process (src/redis/restarts.ts). */
  redisRecovered(r: Recovery): void {
    if (!this.enabled) return;
    const what = r.raised > 0 ? 'fenced' : r.kept > 0 ? 'moved' : 'joined';
    this.redisRecoveries.series({ what }).inc();
    this.redisRecoveredBuckets.series({ what: 'epoch_raised' }).inc(r.raised);
    this.redisRecoveredBuckets.series({ what: 'copy_dropped' }).inc(r.dropped);
  }

  /** A clock for durations, ms (0 when off: nothing is timed). */
  now(): number {
    return this.enabled ? performance.now() : 0;
  }

  /** Counts err when it came from Redis or Postgres (on failure paths only). */
  dependencyError(err: unknown, source: ErrorSource): void {
    const dependency = dependencyOf(err);
    if (dependency !== null) this.errorSeries.get(`${dependency} ${source}`)?.inc();
  }

  /** Counts a connection's failed (re)connection attempts (ioredis's 'error' events). */
  watchRedisConnection(client: { on(event: 'error', listener: (err: Error) => void): unknown }): void {
    if (!this.enabled) return;
    const series = this.redisErrors.series({ source: 'connection' });
    client.on('error', () => series.inc());
  }

  /** Node's process metrics (CPU, memory, event-loop lag, GC) under their usual names (process_, nodejs_), into this registry. */
  collectProcessMetrics(): void {
    if (this.enabled) collectDefaultMetrics({ register: this.node });
  }

  /**
   * The usage gauges: backlog, lag and dead letters, read from Redis when scraped (every
   * worker's, wherever it runs), within SCRAPE_TIMEOUT_MS; NaN when Redis does not answer.
   */
  watchUsage(read: () => Promise<UsageState>): void {
    if (!this.enabled) return;
    const failed = this.redisErrors.series({ source: 'scrape' });
    const state = (): Promise<UsageState | null> => {
      // the three gauges of one scrape share one read
      this.usageRead ??= withinTimeout(read(), SCRAPE_TIMEOUT_MS)
        .catch(() => {
          failed.inc(); // it asks Redis only
          return null;
        })
        .finally(() => setImmediate(() => { this.usageRead = null; }));
      return this.usageRead;
    };
    const gauge = (name: string, help: string, pick: (s: UsageState) => number) => new Gauge({
      name, help, registers: [this.fromRedis],
      async collect() {
        const s = await state();
        this.set(s === null ? NaN : pick(s));
      },
    });
    gauge('license_usage_backlog_events', 'Usage events in the Redis streams, not yet in Postgres (every worker\'s); NaN: Redis did not answer', (s) => s.backlog);
    gauge('license_usage_lag_seconds', 'How long the oldest usage event not yet in Postgres has waited', (s) => s.lagMs / 1000);
    gauge('license_usage_dead_letters', 'Usage events Postgres refused for good, waiting for a replay (npm run dead-letters)', (s) => s.deadLetters);
  }

  /** The password hasher's queue (src/licenses/passwords.ts), read when scraped. */
  watchHasher(hasher: { readonly queued: number; readonly hashing: number }): void {
    if (!this.enabled) return;
    new Gauge({
      name: 'license_hasher_jobs', help: 'Password hashes waiting for the hasher (queued) and being hashed (hashing)', labelNames: ['state'],
      registers: [this.counted],
      collect() {
        this.set({ state: 'queued' }, hasher.queued);
        this.set({ state: 'hashing' }, hasher.hashing);
      },
    });
  }

  /** The text of GET /metrics of a process that answers for itself (WORKERS=1, the standalone worker). */
  async scrape(): Promise<string> {
    const [own, redis] = await Promise.all([Promise.all([this.counted.metrics(), this.node.metrics()]), this.scrapeRedis()]);
    return joinTexts([...own, redis]);
  }

  /** What this process has counted and measured so far, for the primary to add up (never Redis: a hung Redis cannot stall it). */
  async report(): Promise<ProcessReport> {
    const [summed, perProcess] = await Promise.all([metricsJson(this.counted), metricsJson(this.node)]);
    return { summed, perProcess };
  }

  /** The text of the usage gauges read from Redis (within SCRAPE_TIMEOUT_MS): once per scrape, by the process that answers it. */
  scrapeRedis(): Promise<string> {
    return this.fromRedis.metrics();
  }

  private counter(name: string, help: string): CounterFamily {
    const family = new CounterFamily(name, help, this.enabled);
    this.counted.registerMetric(family.asMetric());
    return family;
  }

  private histogram(name: string, help: string, bounds: number[]): HistogramFamily {
    const family = new HistogramFamily(name, help, this.enabled, bounds);
    this.counted.registerMetric(family.asMetric());
    return family;
  }
}

/** Prometheus texts one after the other (each as a registry writes it, blocks apart; an empty one adds nothing). */
export function joinTexts(texts: readonly string[]): string {
  return texts.filter((text) => text.trim() !== '').map((text) => text.endsWith('\n') ? text : `${text}\n`).join('\n');
}

export function withinTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('timed out')), ms); });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** For what records without a registry of its own to record into (tests, the bench's drain). */
export const NO_METRICS = new Metrics(false);
