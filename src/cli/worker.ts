import { loadConfig } from '../config.js';
import { ConfigError } from '../config/vars.js';
import { connectPostgres } from '../db/pg.js';
import { createLogger, guardProcess, scrub } from '../log.js';
import { createRedis } from '../redis/client.js';
import { checkRedisConfig } from '../redis/configCheck.js';
import { loadLibraryAtStart } from '../redis/library.js';
import { serveMetrics } from '../metrics/endpoint.js';
import { Metrics } from '../metrics/registry.js';
import { KeySpace } from '../redis/keys.js';
import { closeAll, reportLeftovers, startWorker, watchMetrics } from '../service.js';
import { STOP_FLUSH_MS } from '../stopFlush.js';

// npm run worker: the usage worker alone (any number of copies may run).
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env, 'worker');
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`license-worker: refusing to start: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  guardProcess(log);
  const redis = createRedis(config, 'license-worker');
  // before the first key is written (docs/operations.md#redis-configuration-check)
  await checkRedisConfig(redis, config.redisConfigCheck, config.production, log).then(() => loadLibraryAtStart(redis)).catch((err: Error) => {
    process.stderr.write(`license-worker: cannot start: ${scrub(err.message)}\n`);
    process.exit(1);
  });
  const sql = await connectPostgres(config.databaseUrl, config.pgSchema, 4);
  const keys = new KeySpace(config.redisPrefix);
  // its own counters and the backlog on GET /metrics at METRICS_PORT, when set
  const serving = config.metrics && config.metricsPort !== null;
  const metrics = new Metrics(serving);
  const worker = await startWorker(config, log, redis, sql, keys, metrics);
  let endpoint: Awaited<ReturnType<typeof serveMetrics>> | null = null;
  if (serving) {
    watchMetrics(metrics, redis, keys, [redis]);
    endpoint = await serveMetrics(metrics, config.host, config.metricsPort ?? 0, config.metricsToken);
  }
  log.info({ consumer: worker.consumer, metricsPort: endpoint?.port ?? null }, 'usage worker running');
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    endpoint?.close();
    void worker.stop(STOP_FLUSH_MS).then(async () => {
      await reportLeftovers(redis, keys, log);
      await closeAll(redis, sql);
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

void main();
