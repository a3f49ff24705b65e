import type { Logger } from 'pino';
import type { Config } from './config.js';
import { adminRoutes } from './admin/v1_licenses.js';
import { RATE_WINDOW_MS, type ApiContext } from './api/context.js';
import { checkQuotaRoute } from './api/license_checkQuota.js';
import { historyRoute } from './api/license_history.js';
import { validateRoute } from './api/license_validate.js';
import { QuotaCache } from './api/quotaCache.js';
import { IssueBatcher } from './redis/issueBatcher.js';
import { getTokenRoute } from './api/v1_auth_getToken.js';
import { signTokenRoute } from './api/v1_auth_signToken.js';
import { connectPostgres, type Sql } from './db/pg.js';
import { healthRoute } from './api/health.js';
import { codeShape } from './http/reply.js';
import { createHttpServer, type Route } from './http/server.js';
import { HotLicenses } from './licenses/hot.js';
import { KnownKeys } from './licenses/knownKeys.js';
import { Passwords } from './licenses/passwords.js';
import { LicenseStore } from './licenses/store.js';
import { createRedis, duplicateRedis, type RedisClient } from './redis/client.js';
import { KeySpace } from './redis/keys.js';
import { TokenService } from './tokens/jwt.js';
import { UsageWorker } from './usage/worker.js';

export interface Service {
  port: number;
  worker: UsageWorker | null;
  /** graceful: stop accepting, answer what was accepted, flush the worker, close connections */
  stop(): Promise<void>;
}

/** Connects everything, applies migrations, listens. Everything here is built once. */
export async function startService(config: Config, log: Logger): Promise<Service> {
  const sql = await connectPostgres(config.databaseUrl, config.pgSchema);
  const redis = createRedis(config, 'license-api');
  const subscriber = duplicateRedis(redis);
  const keys = new KeySpace(config.redisPrefix);
  const store = new LicenseStore(sql);
  const quotaCache = new QuotaCache(config.quotaCacheSeconds * 1000);
  const knownKeys = new KnownKeys(sql);
  await knownKeys.start();
  const ctx: ApiContext = {
    config, log, sql, redis, keys, store, quotaCache,
    tokens: new TokenService(config.jwtSecret),
    hot: new HotLicenses(redis, keys, store, knownKeys, config.unknownKeySeconds * 1000),
    passwords: new Passwords(config.passwordQueue),
    issuer: new IssueBatcher(redis, RATE_WINDOW_MS),
  };

  // admin changes made on any instance evict this instance's check-quota answers, and
  // announce keys created there
  await subscriber.subscribe(keys.invalidationChannel);
  subscriber.on('message', (_channel: string, licenseKey: string) => {
    quotaCache.evict(licenseKey);
    knownKeys.add(licenseKey);
  });

  const worker = config.runWorker ? await startWorker(config, log, redis, sql, keys) : null;

  const routes: Route[] = [
    getTokenRoute(ctx), signTokenRoute(ctx), validateRoute(ctx), checkQuotaRoute(ctx), historyRoute(ctx),
    healthRoute(ctx),
  ];
  if (config.adminToken) routes.push(...adminRoutes(ctx, config.adminToken));
  const http = createHttpServer({
    routes, fallbackErrors: codeShape, tls: config.tls, bodyLimit: config.bodyLimitBytes, trustProxy: config.trustProxy, log,
  });
  const port = await http.listen(config.host, config.port);
  log.info({ host: config.host, port, tls: config.tls !== null, worker: worker !== null }, 'listening');

  return {
    port,
    worker,
    async stop() {
      await http.drain(config.shutdownTimeoutMs);
      http.close();
      await worker?.stop();
      ctx.passwords.close();
      knownKeys.stop();
      await Promise.allSettled([subscriber.quit(), redis.quit(), sql.end({ timeout: 5 })]);
    },
  };
}

export async function startWorker(config: Config, log: Logger, redis: RedisClient, sql: Sql, keys: KeySpace): Promise<UsageWorker> {
  const worker = new UsageWorker(duplicateRedis(redis), sql, keys, config.worker, log);
  await worker.start();
  return worker;
}
