import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { isCluster, type RedisClient } from './client.js';
import type { KeySpace } from './keys.js';

/** Keys looked at per SCAN while dropping the license copies after a restart. */
const SCAN_COUNT = 1000;
/** How long one process may hold the right to recover before another may take it over. */
const RECOVERY_LOCK_MS = 30_000;

/**
 * Notices that the Redis holding this service's data has restarted, or failed over to a
 * replica, keeping some of its data (AOF, RDB, replication) but perhaps not the last
 * writes. Those may include redemptions: a token whose "used" marker was lost would read
 * "issued" again. So before any script runs against such a Redis:
 *  1. every bucket's epoch is raised: tokens marked in an earlier epoch are refused as
 *     used (lua/includes/epoch.lua; fail closed, never redeemed twice);
 *  2. the license and credentials copies are dropped, to be rebuilt from Postgres plus the
 *     queued redemptions when next used (src/licenses/hot.ts), since a lost write may have
 *     been a redemption's count or an admin change;
 *  3. the server's run id is recorded, so the next look finds nothing to do.
 * A Redis that lost everything needs none of it (no marker: fail closed already; no copy:
 * rebuilt), one seen for the first time (no run id recorded) lost nothing we know of, and
 * one with `appendfsync always` kept every write it acknowledged.
 * Checked at start and after every reconnection; the script batchers wait for it.
 */
export class RedisRestarts {
  private verified = false;
  private checking: Promise<void> | null = null;

  constructor(private readonly redis: RedisClient, private readonly keys: KeySpace, private readonly log: Logger) {
    redis.on('close', () => {
      this.verified = false;
    });
    redis.on('ready', () => {
      void this.ensure().catch(() => {}); // a failure leaves it unverified: the next script call tries again
    });
  }

  /** True when no check is owed: scripts may run. */
  get ready(): boolean {
    return this.verified;
  }

  /** Checks once (concurrent callers share the check); rejects when Redis cannot be asked. */
  ensure(): Promise<void> {
    if (this.verified) return Promise.resolve();
    this.checking ??= this.check().then(
      () => {
        this.checking = null;
      },
      (err: unknown) => {
        this.checking = null;
        throw err;
      },
    );
    return this.checking;
  }

  private async check(): Promise<void> {
    for (const node of this.masters()) await this.checkNode(node);
    this.verified = true;
  }

  /**
   * One process at a time looks and recovers; the others wait until it has recorded the
   * run id. Processes start and reconnect together (WORKERS=N on a host, or many hosts),
   * and a second recovery would raise the epochs again: tokens issued in between by the
   * process that recovered first would be refused as used.
   */
  private async checkNode(node: Redis): Promise<void> {
    const runId = /run_id:(\w+)/.exec(await node.info('server'))?.[1] ?? '';
    const lock = `${this.keys.runId}:lock`;
    for (;;) {
      if ((await node.get(this.keys.runId)) === runId) return;
      // expires on its own: a process that dies while recovering does not hold the others for long
      if ((await node.set(lock, String(process.pid), 'PX', RECOVERY_LOCK_MS, 'NX')) === 'OK') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    try {
      const seen = await node.get(this.keys.runId);
      if (seen !== null && seen !== runId && !(await this.keepsEveryWrite(node))) await this.recover(node, seen, runId);
      if (seen !== runId) await node.set(this.keys.runId, runId);
    } finally {
      await node.del(lock);
    }
  }

  /**
   * A Redis that appends every write to its AOF before answering lost nothing in a restart
   * (a failover to a replica can still lose writes: see docs/durability.md).
   */
  private async keepsEveryWrite(node: Redis): Promise<boolean> {
    const [appendonly, appendfsync] = await Promise.all([
      node.config('GET', 'appendonly') as Promise<string[]>, node.config('GET', 'appendfsync') as Promise<string[]>,
    ]).catch((err: unknown) => {
      // CONFIG renamed or forbidden (managed Redis): not known to keep every write, so recover
      if (err instanceof Error && err.name === 'ReplyError') return [null, null];
      throw err;
    });
    return appendonly?.[1] === 'yes' && appendfsync?.[1] === 'always';
  }

  private async recover(node: Redis, before: string, now: string): Promise<void> {
    this.log.warn({ before, now }, 'Redis restarted or failed over: tokens issued before are refused, license copies rebuilt');
    const epochs = this.keys.epochs;
    for (const key of epochs) await node.incr(key);
    let dropped = 0;
    for (const pattern of [`${this.keys.prefix}:{*}:l:*`, `${this.keys.prefix}:{*}:pk:*`, `${this.keys.prefix}:{k:*}:c`]) {
      let cursor = '0';
      do {
        const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        cursor = next;
        if (found.length > 0) dropped += await node.unlink(...found);
      } while (cursor !== '0');
    }
    this.log.warn({ dropped, epochs: epochs.length }, 'Redis restart handled: epochs raised, license copies dropped');
  }

  private masters(): Redis[] {
    // On a Cluster each master would need a run id key in its own slots: not done yet, so a
    // Cluster master that fails over to a replica missing its last writes is not noticed
    return isCluster(this.redis) ? [] : [this.redis as Redis];
  }
}
