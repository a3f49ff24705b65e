import { availableParallelism } from 'node:os';
import type { Redis } from 'ioredis';
import { loadConfig, type Config } from '../../src/config.js';
import { KeySpace } from '../../src/redis/keys.js';
import { testEnv, testStorage, type Teardown } from './harness.js';
import { clientOf, type Client } from './http.js';
import { DEFAULT_WORKERS, spawnServer, type ServerProcess } from './processes.js';

// The service as `npm start` runs it: `node dist/src/cli/server.js` with WORKERS unset, so
// one process per core serves the one port, with the test's own storage (REDIS_PREFIX,
// PG_SCHEMA) cleaned up at teardown. Requests meant to reach every process go on fresh
// connections (./sockets.ts oneRequestPerConnection): a keep-alive connection sticks to one.

export interface DefaultServer {
  server: ServerProcess;
  port: number;
  /** the server processes, as the primary listed them */
  pids: number[];
  /** a keep-alive client (its requests land on one process or another, not on every one) */
  client: Client;
  config: Config;
  keys: KeySpace;
  /** the test's own client of the service's Redis */
  redis: Redis;
}

/** Starts the built server with the defaults plus `overrides` (WORKERS stays unset). */
export async function startDefaultServer(t: Teardown, label: string, overrides: Record<string, string> = {}): Promise<DefaultServer> {
  const env = testEnv(label, { LOG_LEVEL: 'info', ...overrides });
  const config = loadConfig(env);
  const { redis } = testStorage(t, config);
  const server = await spawnServer(t, { ...env, WORKERS: DEFAULT_WORKERS }, 30_000);
  const pids = server.records().find((r) => r.msg === 'listening: all children')?.pids as number[] | undefined;
  if (!pids || pids.length !== availableParallelism()) throw new Error(`expected one process per core, the primary said: ${JSON.stringify(pids)}`);
  return { server, port: server.port, pids, client: clientOf(server.url), config, keys: new KeySpace(config.redisPrefix), redis };
}

/** Every Redis key of a license key's slot ({k:<licenseKey>}: credentials, check-quota's answer, the counters), sorted. */
export async function keysOf(s: Pick<DefaultServer, 'redis' | 'config'>, licenseKey: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await s.redis.scan(cursor, 'MATCH', `${s.config.redisPrefix}:{k:${licenseKey}}:*`, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found.sort();
}
