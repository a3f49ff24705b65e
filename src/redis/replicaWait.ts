import type { Cluster, Redis } from 'ioredis';
import { ServiceUnavailable } from '../errors.js';
import type { RedisClient } from './client.js';
import { ensureLibrary, functionOf, isMissingFunction } from './library.js';
import { mastersOf } from './masters.js';
import type { ScriptName } from './scriptCall.js';

/**
 * REDIS_WAIT_REPLICAS: a redemption is answered only once that many replicas hold it (Redis
 * WAIT), so a failover to one of them cannot lose a redemption a client was answered for.
 * WAIT is best effort (Sentinel and Cluster promote the most up-to-date replica they reach,
 * not necessarily one that acknowledged): what rules out a double spend after a failover is
 * the fence of src/redis/restarts.ts, this only keeps answered units from being lost.
 * Fewer acknowledgements within REDIS_WAIT_TIMEOUT_MS: the call is answered 503, as a call
 * whose answer was lost (the unit may be spent; a retry with its Idempotency-Key tells).
 */
export class ReplicaWait {
  constructor(readonly replicas: number, readonly timeoutMs: number) {}

  /**
   * WAIT sent on one connection after a turn's calls: it covers every write sent before it
   * on that connection, so one WAIT serves the whole turn. Rejects when too few replicas
   * acknowledged in time.
   */
  afterTurn(connection: Redis): Promise<void> {
    return (connection.wait(this.replicas, this.timeoutMs) as Promise<number>).then((acked) => this.check(acked));
  }

  /**
   * One script call and a WAIT behind it on the node the call runs on (a pipeline goes to
   * the node of its keys: on a Cluster, the slot's master).
   */
  async withCall(client: RedisClient, name: ScriptName, args: (string | number)[], attempt = 1): Promise<unknown> {
    const pipeline = client.pipeline();
    pipeline.fcall(functionOf(name), ...(args as [number, ...(string | number)[]]));
    pipeline.wait(this.replicas, this.timeoutMs);
    const [[callError, reply] = [null, null], [waitError, acked] = [null, 0]] = (await pipeline.exec()) ?? [];
    if (callError && isMissingFunction(callError) && attempt === 1) {
      await ensureLibrary(client); // nothing ran: load the library, and make the call again with its WAIT
      return this.withCall(client, name, args, 2);
    }
    if (callError) throw callError;
    if (waitError) throw waitError;
    this.check(Number(acked));
    return reply;
  }

  private check(acked: number): void {
    if (acked < this.replicas) {
      throw new ServiceUnavailable(`Redis WAIT: ${acked} of REDIS_WAIT_REPLICAS=${this.replicas} replicas acknowledged within ${this.timeoutMs} ms`);
    }
  }
}

/** Replicas a master's INFO replication lists as online (state=online). */
export function onlineReplicas(info: string): number {
  let online = 0;
  for (const line of info.split('\n')) if (/^slave\d+:.*state=online/.test(line)) online++;
  return online;
}

/** Whether every master (one, or each of a Cluster) has at least `replicas` replicas online to acknowledge a WAIT. */
export async function replicasOnline(client: Redis | Cluster, replicas: number): Promise<boolean> {
  const counts = await Promise.all(mastersOf(client).map(async (m) => onlineReplicas(await m.info('replication'))));
  return counts.every((n) => n >= replicas);
}
