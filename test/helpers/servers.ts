import { availableParallelism } from 'node:os';
import type { Redis } from 'ioredis';
import type { Config } from '../../src/config.js';
import type { KeySpace } from '../../src/redis/keys.js';
import type { DeployedService } from './deployed.js';
import { startHarness, type Teardown } from './harness.js';
import type { Client } from './http.js';
import type { ServerProcess } from './processes.js';

// The check-quota tests' view of the service as startHarness runs it (`npm start`, WORKERS
// unset: one process per core on one port): the processes' pids, to aim requests at each of
// them (./sockets.ts oneRequestPerConnection), and the keys of a license key's slot.

export interface DefaultServer {
  server: ServerProcess;
  port: number;
  /** the server processes, as the primary listed them */
  pids: number[];
  /** a client of the service (each request on a connection of its own) */
  client: Client;
  config: Config;
  keys: KeySpace;
  /** the test's own client of the service's Redis */
  redis: Redis;
}

/** The service as startHarness runs it (WORKERS unset), seen as these tests use it: its processes' pids and one client. */
export async function startDefaultServer(t: Teardown, label: string, overrides: Record<string, string> = {}): Promise<DefaultServer> {
  const h = await startHarness(t, label, overrides);
  const deployment = h.deployment as DeployedService;
  const pids = deployment.children();
  if (pids.length !== availableParallelism()) throw new Error(`expected one process per core, the primary started: ${JSON.stringify(pids)}`);
  return { server: deployment.server, port: h.service.port, pids, client: h, config: h.config, keys: h.keys, redis: h.redis };
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
