import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { isCluster, type RedisClient } from './client.js';
import type { KeySpace } from './keys.js';
import { scriptSource } from './scriptSource.js';
import { ensureLibrary, isMissingFunction } from './library.js';
import { mastersOf } from './masters.js';

/** Keys looked at per SCAN while dropping the license copies of a new server. */
const SCAN_COUNT = 1000;
/** Calls of one script made at most: the first, and again after each recovery it needed. */
const MAX_CALLS = 3;
const NEW_SERVER = /^NEWSERVER /;

/** What the service does on meeting a new Redis process, for the metrics and the log. */
export interface Recovery {
  runId: string;
  /** license copies dropped, to be rebuilt from Postgres plus the queued events */
  dropped: number;
  /** buckets whose epoch was raised: their outstanding tokens are refused as used */
  raised: number;
  /** buckets stamped without a raise: their data arrived whole (a slot moved by resharding, an upgrade) */
  kept: number;
}

/**
 * Fences a Redis process the service has not verified: a replica promoted by a failover
 * (Sentinel, Cluster, a virtual IP moved), or a server restarted from its AOF or RDB. Such a
 * process may lack the last writes the service was answered for, whatever its fsync setting
 * (replication is asynchronous), and a redemption among them would leave its token
 * "issued" again: redeemable twice.
 *
 * How it is noticed: every script that changes a bucket first compares the bucket's stamp,
 * the run id of the process the bucket was last verified on, with the run id of the process
 * running it (lua/includes/server.lua). A new process has a new run id, and the stamp is data
 * it copied from the old one, so the first script of any service process there changes
 * nothing and fails with NEWSERVER; the check is inside the script, so no write comes between
 * it and the script's own, and nothing depends on a client noticing a reconnection (a Cluster
 * client following a MOVED to the promoted replica reconnects nothing).
 *
 * What is done then (recover), before the call runs again:
 *  1. the license copies on that process are dropped, to be rebuilt from Postgres plus the
 *     events still queued there (src/licenses/hot.ts), since a lost write may have been a
 *     redemption's count or an admin change; credentials copies and check-quota's answers
 *     name the process they were written on and are not used elsewhere (lua/sync.lua,
 *     lua/checkQuota.lua);
 *  2. each bucket held there has its epoch raised (tokens issued before are refused as used:
 *     fail closed) and is stamped with the process (lua/stamp.lua), once per process whoever
 *     asks: every service process that meets the new server recovers it, only the first
 *     raises.
 */
export class RedisRestarts {
  /** recoveries under way, by the run id of the process recovered */
  private readonly recovering = new Map<string, Promise<void>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly log: Logger,
    private readonly onRecovery: (recovery: Recovery) => void = () => {},
  ) {}

  /**
   * At start: recovers each master whose buckets are not all stamped with it, so a first
   * deployment is stamped before anything is written (a restart of the service alone finds
   * every stamp in place and does nothing).
   */
  async ensure(): Promise<void> {
    const nodes = mastersOf(this.redis);
    for (const node of nodes) await this.recover(runIdOf(await node.info('server')));
  }

  /**
   * Runs a call of a script that checks the stamp; when it meets a new server, recovers
   * that server and runs it again (the call changed nothing there).
   */
  fenced<R>(run: () => Promise<R>, calls = 1): Promise<R> {
    return run().catch((err: unknown) => {
      const runId = newServerOf(err);
      if (runId === null || calls >= MAX_CALLS) throw err;
      return this.recover(runId).then(() => this.fenced(run, calls + 1));
    });
  }

  /** As fenced, where the first call is made already (first) and again makes the next ones. */
  fencedFrom<R>(first: Promise<R>, again: () => Promise<R>): Promise<R> {
    return first.catch((err: unknown) => {
      // a raw FCALL (src/redis/slotBatcher.ts, under REDIS_WAIT_REPLICAS) that found no library ran nothing
      if (isMissingFunction(err)) return ensureLibrary(this.redis).then(() => this.fenced(again, 2));
      const runId = newServerOf(err);
      if (runId === null) throw err;
      return this.recover(runId).then(() => this.fenced(again, 2));
    });
  }

  /** Recovers the process with this run id once (concurrent callers share the recovery). */
  recover(runId: string): Promise<void> {
    let recovery = this.recovering.get(runId);
    if (recovery === undefined) {
      recovery = this.recoverServer(runId).finally(() => this.recovering.delete(runId));
      this.recovering.set(runId, recovery);
    }
    return recovery;
  }

  private async recoverServer(runId: string): Promise<void> {
    const node = await this.nodeRunning(runId);
    for (let round = 1; ; round++) {
      const owed = (await this.bucketsOn(node)).filter((b) => b.stamp !== runId);
      if (owed.length === 0) return; // another process recovered it
      const whole = await this.wholeSources(node, runId);
      const lost = owed.filter((b) => !whole.has(b.stamp));
      // copies are dropped before any bucket is stamped: until then every script there fails
      const dropped = lost.length > 0 ? await this.dropCopies(node) : 0;
      const stamped = await Promise.all(owed.map(({ bucket, stamp }) => node.eval(scriptSource('stamp'), 2,
        this.keys.stamps[bucket] as string, this.keys.epochs[bucket] as string, runId, stamp, whole.has(stamp) ? '1' : '0') as Promise<number>));
      const recovery: Recovery = {
        runId, dropped, raised: stamped.filter((s) => s === 1).length, kept: stamped.filter((s) => s === 2).length,
      };
      if (owed.every((b) => b.stamp === '') && dropped === 0) {
        // a Redis that never held a stamp: a first deployment (or one that lost everything): nothing to warn of
        this.log.info({ ...recovery, buckets: owed.map((b) => b.bucket) }, 'Redis buckets stamped with this server');
      } else if (recovery.raised > 0 || recovery.kept > 0) {
        this.log.warn({ ...recovery, buckets: owed.map((b) => b.bucket) }, recovery.raised > 0
          ? 'Redis server changed (a failover or a restart): tokens issued before are refused as used, license copies rebuilt'
          : 'Redis buckets moved to another master whole (a resharding, or an upgrade): stamped, nothing refused');
      }
      this.onRecovery(recovery);
      // a stamp changed between its read and its recovery (-2): read again, a few times
      if (!stamped.includes(-2) || round >= 3) return;
    }
  }

  /** The buckets the process serves (on a Cluster, those of its slots) and their stamps ("" = none). */
  private async bucketsOn(node: Redis): Promise<{ bucket: number; stamp: string }[]> {
    const stamps = await Promise.all(this.keys.stamps.map((key) =>
      // a key of a slot the node does not serve: MOVED (or ASK while it moves), not here
      node.get(key).then((stamp) => stamp ?? '', (err: unknown) => {
        if (err instanceof Error && /^(MOVED|ASK) /.test(err.message)) return null;
        throw err;
      })));
    return stamps.flatMap((stamp, bucket) => (stamp === null ? [] : [{ bucket, stamp }]));
  }

  /**
   * The stamps whose buckets reached this process whole, so their epochs stay: on a Cluster,
   * those of the masters this node sees serving slots and not failing (a slot moved by
   * MIGRATE arrives whole, and a master replaced by a failover is failed, or a replica,
   * before its replica may take its slots); on a single Redis, no stamp at all when the
   * version before stamps named this same process (an upgrade). Anything else may have
   * lost writes.
   */
  private async wholeSources(node: Redis, runId: string): Promise<Set<string>> {
    const whole = new Set<string>();
    if (!isCluster(this.redis)) {
      if ((await node.get(this.keys.legacyRunId)) === runId) whole.add('');
      return whole;
    }
    const serving = servingMasters(String(await node.cluster('NODES')));
    await Promise.all(this.redis.nodes('all').map(async (other) => {
      const [id, info] = await Promise.all([other.cluster('MYID') as Promise<string>, other.info('server')]).catch(() => [null, '']);
      if (id !== null && serving.has(String(id))) whole.add(runIdOf(info as string));
    }));
    whole.delete(runId);
    whole.delete('');
    return whole;
  }

  /** The connection to the process with this run id: the one Redis, or the Cluster node running it. */
  private async nodeRunning(runId: string): Promise<Redis> {
    if (!isCluster(this.redis)) return this.redis as Redis;
    for (const node of this.redis.nodes('all')) {
      if (runIdOf(await node.info('server').catch(() => '')) === runId) return node;
    }
    throw new Error(`no Redis Cluster node runs ${runId} (it failed over again): the call is refused, the next recovers`);
  }

  private async dropCopies(node: Redis): Promise<number> {
    let dropped = 0;
    for (const pattern of [`${this.keys.prefix}:{*}:l:*`, `${this.keys.prefix}:{*}:pk:*`]) {
      let cursor = '0';
      do {
        const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        cursor = next;
        // one key at a time: on a Cluster node the keys found are of several slots
        if (found.length > 0) dropped += (await Promise.all(found.map((key) => node.unlink(key)))).reduce((a, b) => a + b, 0);
      } while (cursor !== '0');
    }
    return dropped;
  }
}

/** Node ids of the masters serving slots, not failing, in a CLUSTER NODES answer (the node's own line aside). */
function servingMasters(nodes: string): Set<string> {
  const out = new Set<string>();
  for (const line of nodes.split('\n')) {
    const [id, , flags = '', , , , , link, ...slots] = line.trim().split(' ');
    const f = flags.split(',');
    if (!id || !f.includes('master') || f.includes('myself') || f.includes('fail') || f.includes('fail?') || f.includes('noaddr')) continue;
    if (link === 'connected' && slots.length > 0) out.add(id);
  }
  return out;
}

function runIdOf(info: string): string {
  return /run_id:(\w+)/.exec(info)?.[1] ?? '';
}

/** The run id a script's NEWSERVER error names, or null for any other error. */
export function newServerOf(err: unknown): string | null {
  if (!(err instanceof Error) || !NEW_SERVER.test(err.message)) return null;
  return /run_id:(\w+)/.exec(err.message)?.[1] ?? null;
}
