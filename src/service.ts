import type { Logger } from 'pino';
import { RATE_WINDOW_MS, type Config } from './config.js';
import { connectPostgres, openPostgres, WORKER_SETTINGS, type Sql } from './db/pg.js';
import { CorsPolicy } from './http/cors.js';
import type { Route } from './http/route.js';
import { createHttpServer } from './http/server.js';
import { LicenseAdmin } from './licenses/changes.js';
import { LoginLimits } from './licenses/loginLimits.js';
import { HotLicenses } from './licenses/hot.js';
import { KnownKeys } from './licenses/knownKeys.js';
import { Passwords } from './licenses/passwords.js';
import { LicenseStore } from './licenses/store.js';
import { ChildScrape } from './metrics/childScrape.js';
import { Metrics } from './metrics/registry.js';
import { createRedis, duplicateRedis, whenReady, type RedisClient } from './redis/client.js';
import { RedisClock } from './redis/clock.js';
import { checkRedisConfig } from './redis/configCheck.js';
import { loadLibraryAtStart } from './redis/library.js';
import { KeySpace } from './redis/keys.js';
import { RedisRestarts } from './redis/restarts.js';
import { ReplicaWait } from './redis/replicaWait.js';
import { issueLayout, redeemLayout } from './redis/batchScripts.js';
import { SlotBatcher } from './redis/slotBatcher.js';
import type { RouteContext } from './routes/context.js';
import { artefactSignerOf } from './tokens/signingKeys.js';
import { serviceRoutes } from './routes/index.js';
import { codedErrors } from './routes/replies.js';
import { SignTokenIssuer } from './tokens/issueSignToken.js';
import { TokenService } from './tokens/jwt.js';
import { SignTokenRedeemer } from './tokens/redeemSignToken.js';
import { SignTokenReleaser } from './tokens/releaseSignToken.js';
import { usageLag, usageLagMs } from './usage/lag.js';
import { PartitionKeeper } from './usage/partitionKeeper.js';
import { ForfeitSweep } from './usage/forfeitSweep.js';
import { UsageWorker, type Companion } from './usage/worker.js';
import { WebhookWorker } from './webhooks/worker.js';
import { STOP_FLUSH_MS } from './stopFlush.js';

export interface Service {
  port: number;
  worker: UsageWorker | null;
  /** every route the HTTP layer serves (test/system/openapi.test.ts holds /openapi.json and /admin/openapi.json to them) */
  routes: readonly Route[];
  /** graceful: stop accepting, answer what was accepted, flush the worker, close connections */
  stop(): Promise<void>;
  /** TLS_CERT_FILE and TLS_KEY_FILE read again for new connections (SIGHUP): the new certificate's fingerprint, null without TLS */
  reloadTls(): Promise<string | null>;
}

export interface ServiceOptions {
  /** a child of a primary (WORKERS > 1, src/cli/primary.ts): GET /metrics answers for the whole instance, through the primary */
  child?: boolean;
}

/** Connects everything, applies migrations, listens. Everything here is built once. */
export async function startService(config: Config, log: Logger, options: ServiceOptions = {}): Promise<Service> {
  const metrics = new Metrics(config.metrics);
  const sql = await connectPostgres(config.databaseUrl, config.pgSchema);
  const redis = createRedis(config, 'license-api', { offlineQueue: false });
  const keys = new KeySpace(config.redisPrefix);
  await whenReady(redis, 10_000);
  // before the first key is written: a Redis that may evict them refuses the start
  await checkRedisConfig(redis, config.redisConfigCheck, config.production, log).then(() => loadLibraryAtStart(redis)).catch(async (err: unknown) => {
    await closeAll(redis, sql);
    throw err;
  });
  const restarts = new RedisRestarts(redis, keys, log, (recovery) => metrics.redisRecovered(recovery));
  await restarts.ensure();
  const subscriber = duplicateRedis(redis);
  watchMetrics(metrics, redis, keys, [redis, subscriber]);
  const clock = new RedisClock(redis, config.redisCommandTimeoutMs);
  await clock.start();
  const store = new LicenseStore(sql);
  const knownKeys = new KnownKeys(sql);
  // subscribed before the keys are read: a key created in between is in the read or announced
  // after it, never missed (until the next refresh) by a process that was starting
  await subscriber.subscribe(keys.invalidationChannel);
  subscriber.on('message', (_channel: string, licenseKey: string) => knownKeys.add(licenseKey));
  await knownKeys.start();
  const tokens = new TokenService(config.jwtKeys, config.jwtIssuer);
  const hot = new HotLicenses(redis, keys, store, knownKeys, config.unknownKeySeconds * 1000, restarts);
  const passwords = new Passwords(config.passwordQueue);
  metrics.watchHasher(passwords);
  const ctx: RouteContext = {
    config, log, sql, redis, keys, store, tokens, hot, passwords,
    artefacts: artefactSignerOf(config.signingKeys),
    logins: new LoginLimits(redis, keys, config, clock),
    issuer: new SignTokenIssuer(keys, new SlotBatcher(redis, issueLayout, RATE_WINDOW_MS, clock, restarts), tokens, hot, config.releaseWindowMs),
    releaser: new SignTokenReleaser(redis, keys, hot, config.releaseWindowMs),
    redeemer: new SignTokenRedeemer(keys, new SlotBatcher(redis, redeemLayout, RATE_WINDOW_MS, clock, restarts,
      config.redisWait.replicas > 0 ? new ReplicaWait(config.redisWait.replicas, config.redisWait.timeoutMs) : null), hot),
    admin: new LicenseAdmin(redis, keys, store, hot, passwords),
    metrics,
  };

  // keys created on any instance are announced (subscribed above); after a reconnection
  // (messages published meanwhile are lost) the keys are read again from Postgres at once
  let connected = subscriber.status === 'ready';
  subscriber.on('ready', () => {
    if (connected) void knownKeys.refresh().catch(() => {});
    connected = true;
  });

  const worker = config.runWorker ? await startWorker(config, log, redis, sql, keys, metrics) : null;

  const routes = serviceRoutes(ctx, options.child ? new ChildScrape(metrics) : metrics);
  const http = createHttpServer({
    routes, fallbackErrors: codedErrors, tls: config.tls, bodyLimit: config.bodyLimitBytes, trustProxy: config.trustProxy, log,
    cors: config.corsOrigins === null ? null : new CorsPolicy(config.corsOrigins), metrics,
  });
  const port = await http.listen(config.host, config.port);
  log.info({ host: config.host, port, tls: config.tls !== null, worker: worker !== null }, 'listening');

  return {
    port,
    worker,
    routes,
    reloadTls: () => http.reloadTls(),
    async stop() {
      const stopBy = Date.now() + config.shutdownTimeoutMs + STOP_FLUSH_MS;
      await http.drain(config.shutdownTimeoutMs);
      http.close();
      ctx.passwords.close();
      knownKeys.stop();
      clock.stop();
      if (worker) {
        await worker.stop(Math.max(500, stopBy - Date.now()));
        await reportLeftovers(redis, keys, log);
      }
      await closeAll(subscriber, redis, sql);
    },
  };
}

/**
 * Added to the worker connection's command timeout: its reads bring back up to
 * WORKER_BATCH_SIZE events of every stream at once, and no client waits on it. Not much
 * more: a call in flight when its connection drops is neither answered nor failed by
 * ioredis (src/redis/client.ts), so the worker sits out a Redis restart for this long (with
 * 30 s, a restarted Redis's backlog stayed unread through a 20 s fault test).
 */
export const WORKER_REDIS_TIMEOUT_MS = 2_000;

/** Logs the usage events the stop leaves in Redis: nothing is lost, the next worker writes them. */
export async function reportLeftovers(redis: RedisClient, keys: KeySpace, log: Logger): Promise<void> {
  const left = await usageLag(redis, keys).catch(() => null);
  if (left !== 0) log.warn({ usageLag: left }, 'usage events left in the streams for the next worker');
}

/** Closes the connections, waiting at most a second for each to say goodbye. */
export async function closeAll(...connections: (RedisClient | Sql)[]): Promise<void> {
  await Promise.allSettled(connections.map((c) => {
    const polite = 'quit' in c ? c.quit() : c.end({ timeout: 1 });
    return Promise.race([polite, new Promise((resolve) => setTimeout(resolve, 1000).unref())]).finally(() => {
      if ('disconnect' in c) c.disconnect();
    });
  }));
}

/** Closes a pool without waiting on its queries, within 200 ms whatever Postgres does: a stop stays bounded. */
async function closeAtOnce(sql: Sql): Promise<void> {
  await Promise.race([sql.end({ timeout: 0 }).catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 200).unref())]);
}

/** What /metrics reads at scrape time: Node's own figures and the usage streams; and each connection's failed (re)connections. */
export function watchMetrics(metrics: Metrics, redis: RedisClient, keys: KeySpace, connections: RedisClient[]): void {
  metrics.collectProcessMetrics();
  metrics.watchUsage(async () => {
    const [backlog, lagMs, deadLetters] = await Promise.all([usageLag(redis, keys), usageLagMs(redis, keys), redis.xlen(keys.deadLetters)]);
    return { backlog, lagMs, deadLetters };
  });
  for (const c of connections) metrics.watchRedisConnection(c);
}

/** The usage worker, and beside it the webhook sender on two connections of its own (never in the usage worker's way). */
export async function startWorker(
  config: Config, log: Logger, redis: RedisClient, sql: Sql, keys: KeySpace, metrics: Metrics,
): Promise<UsageWorker> {
  const connection = duplicateRedis(redis, WORKER_REDIS_TIMEOUT_MS);
  metrics.watchRedisConnection(connection);
  const webhooks = new WebhookWorker(openPostgres(config.databaseUrl, config.pgSchema, 2, 'license-webhooks'), config.webhooks, log);
  const partitions = new PartitionKeeper(sql, config.retentionDays, log, metrics.usagePartitionsDropped.series({}));
  // a pool of its own: while Postgres does not answer, its queries must not hold the connections requests and /healthz need
  const sweepSql = openPostgres(config.databaseUrl, config.pgSchema, 1, 'license-forfeits');
  const restarts = new RedisRestarts(redis, keys, log, (recovery) => metrics.redisRecovered(recovery));
  const sweep = new ForfeitSweep(sweepSql, new HotLicenses(redis, keys, new LicenseStore(sweepSql), new KnownKeys(sweepSql), 0, restarts), log);
  // batches on a connection of their own, planned once (WORKER_SETTINGS)
  const batchSql = openPostgres(config.databaseUrl, config.pgSchema, 1, 'license-usage', WORKER_SETTINGS);
  const companions: Companion = {
    start: () => { webhooks.start(); sweep.start(); },
    stop: async (timeoutMs) => {
      // a sweep pass holds nothing that must finish (the next worker sweeps again): it gets half a second at most
      await Promise.all([webhooks.stop(timeoutMs), sweep.stop(Math.min(timeoutMs, 500))]);
      await closeAtOnce(sweepSql);
    },
    // a batch still in flight (Postgres not answering) stays pending in Redis
    stopped: () => closeAtOnce(batchSql),
  };
  const worker = new UsageWorker(connection, batchSql, keys,
    { ...config.worker, quotaLowPercent: config.webhooks.quotaLowPercent }, log, companions, metrics, partitions);
  await worker.start();
  return worker;
}
