import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Teardown } from '../harness.js';
import { freeLoopbackPort } from '../processes.js';
import { waitFor } from '../wait.js';
import { RedisNode } from './node.js';
import type { ReplicatedRedis } from './replicated.js';
import { call, type Address, type Reply } from './resp.js';

// Redis Sentinel watching a replicated Redis (startReplicatedRedis): `count` redis-sentinel
// processes on loopback ports, each with its config file in its own folder (Sentinel
// rewrites it: the sentinels it met, the replicas, the current epoch and master). With
// down-after 1 s a master that stops answering is subjectively down after a second,
// objectively down once `quorum` sentinels agree, and one of them, elected by a majority,
// promotes a replica.

export interface SentinelOptions {
  /** sentinels to run (default 3) */
  count?: number;
  /** sentinels that must agree the master is down (default 2) */
  quorum?: number;
  /** down-after-milliseconds (default 1000) */
  downAfterMs?: number;
  /** failover-timeout (default 3000): a failed attempt is retried after twice this */
  failoverTimeoutMs?: number;
  /** the name the master is monitored under (default "mymaster") */
  masterName?: string;
  /** the sentinels' own requirepass (clients: ioredis's sentinelPassword); they use it with each other too (sentinel sentinel-pass) */
  requirepass?: string;
  /** how long to wait for the sentinels to know each other and the replicas (default 15 s) */
  readyTimeoutMs?: number;
}

function checkedSetting(name: string, value: string): string {
  if (!/^[\w.@%+=:,/-]+$/.test(value)) throw new Error(`${name} must be letters, digits or _.@%+=:,/- for a sentinel config: ${JSON.stringify(value)}`);
  return value;
}

/** SENTINEL MASTER's flat field/value array as a record. */
function fields(reply: Reply): Record<string, string> {
  const out: Record<string, string> = {};
  const list = reply as string[];
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i] as string] = String(list[i + 1]);
  return out;
}

export class Sentinels {
  constructor(
    readonly nodes: RedisNode[],
    /** the master's name (SENTINEL get-master-addr-by-name <name>) */
    readonly name: string,
    readonly quorum: number,
    /** the sentinels' own password, if any */
    readonly password: string | undefined,
    /** the Redis nodes' password (sentinel auth-pass), if any */
    readonly authPass: string | undefined,
  ) {}

  /** { host, port } of every sentinel: ioredis's `sentinels` option. */
  get addresses(): Address[] {
    return this.nodes.map((n) => ({ host: n.host, port: n.port }));
  }

  /** What one sentinel names as the master now (null: it knows no master by that name). */
  async masterSeenBy(sentinel: RedisNode): Promise<Address | null> {
    const reply = await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name) as string[] | null;
    return reply ? { host: String(reply[0]), port: Number(reply[1]) } : null;
  }

  /** The sentinels' answers: the address each answering one names (paused and dead ones skipped; failures as null). */
  async views(): Promise<(Address | null)[]> {
    return Promise.all(this.nodes.filter((n) => n.answering).map((n) => this.masterSeenBy(n).catch(() => null)));
  }

  /**
   * Waits until at least `quorum` sentinels (and every one that answers) name a master other
   * than `oldMaster`, and that node answers ROLE as a master; resolves with its address.
   */
  async waitForPromotion(oldMaster: Address, timeoutMs = 30_000): Promise<Address> {
    let seen: (Address | null)[] = [];
    let promoted: Address | null = null;
    await waitFor(() => `sentinels to name a master other than ${oldMaster.host}:${oldMaster.port} (they name: ` +
      `${seen.map((a) => (a ? `${a.host}:${a.port}` : '-')).join(', ')})`, async () => {
      seen = await this.views();
      const first = seen[0];
      if (!first || seen.length < this.quorum) return false;
      if (!seen.every((a) => a !== null && a.host === first.host && a.port === first.port)) return false;
      if (first.host === oldMaster.host && first.port === oldMaster.port) return false;
      const role = await call(first, ['ROLE'], { password: this.authPass }).catch(() => null) as string[] | null;
      promoted = role?.[0] === 'master' ? first : null;
      return promoted !== null;
    }, timeoutMs, 100);
    return promoted as unknown as Address;
  }

  /** Waits until every answering sentinel knows the others and `replicas` replicas, and SENTINEL CKQUORUM passes. */
  async waitReady(replicas: number, timeoutMs = 15_000): Promise<void> {
    let seen = '';
    await waitFor(() => `every sentinel to know ${this.nodes.length - 1} others and ${replicas} replicas of ${this.name} (${seen})`, async () => {
      const states = await Promise.all(this.nodes.filter((n) => n.answering).map(async (n) => {
        const m = fields(await n.call('SENTINEL', 'MASTER', this.name));
        const quorum = await n.call('SENTINEL', 'CKQUORUM', this.name).then(() => true, () => false);
        seen = `${n.name}: ${m['num-other-sentinels']} others, ${m['num-slaves']} replicas, flags ${m.flags}, ckquorum ${quorum}`;
        return Number(m['num-other-sentinels']) === this.nodes.length - 1 && Number(m['num-slaves']) === replicas && quorum;
      }));
      return states.every(Boolean);
    }, timeoutMs, 100);
  }
}

/**
 * `count` redis-sentinel processes monitoring `redis`'s master under `masterName`, with
 * auth-pass the nodes' password (if any) and the sentinels' own requirepass (if given);
 * resolves once each knows the others and every replica and CKQUORUM passes. Killed and
 * their folders removed at teardown (register before what uses them).
 */
export async function startSentinels(t: Teardown, redis: ReplicatedRedis, options: SentinelOptions = {}): Promise<Sentinels> {
  const {
    count = 3, quorum = 2, downAfterMs = 1000, failoverTimeoutMs = 3000, masterName = 'mymaster', requirepass, readyTimeoutMs = 15_000,
  } = options;
  const master = redis.master;
  const name = checkedSetting('masterName', masterName);
  const lines = (port: number, dir: string) => [
    `port ${port}`,
    'bind 127.0.0.1',
    'daemonize no',
    'logfile ""',
    `dir ${dir}`,
    'sentinel resolve-hostnames no',
    `sentinel monitor ${name} ${master.host} ${master.port} ${quorum}`,
    `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
    `sentinel failover-timeout ${name} ${failoverTimeoutMs}`,
    `sentinel parallel-syncs ${name} 1`,
    ...(redis.password === undefined ? [] : [`sentinel auth-pass ${name} ${checkedSetting('password', redis.password)}`]),
    ...(requirepass === undefined ? [] : [`requirepass ${checkedSetting('requirepass', requirepass)}`, `sentinel sentinel-pass ${requirepass}`]),
  ];
  const nodes: RedisNode[] = [];
  for (let i = 1; i <= count; i++) {
    nodes.push(await RedisNode.start(t, {
      name: `sentinel-${i}`, binary: 'redis-sentinel', host: '127.0.0.1', password: requirepass, pickPort: freeLoopbackPort,
      async argsFor(port, dir) {
        const file = path.join(dir, 'sentinel.conf');
        await writeFile(file, `${lines(port, dir).join('\n')}\n`);
        return [file];
      },
    }));
  }
  const sentinels = new Sentinels(nodes, name, quorum, requirepass, redis.password);
  await sentinels.waitReady(redis.replicas.length, readyTimeoutMs);
  return sentinels;
}
