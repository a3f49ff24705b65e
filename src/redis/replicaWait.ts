import type { Redis } from 'ioredis';
import { ServiceUnavailable } from '../errors.js';
import type { RedisClient } from './client.js';

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
  async withCall(client: RedisClient, name: string, args: (string | number)[]): Promise<unknown> {
    const pipeline = client.pipeline() as unknown as Record<string, (...a: unknown[]) => unknown> & { exec(): Promise<[Error | null, unknown][] | null> };
    pipeline[name]?.(...args);
    (pipeline as unknown as { wait(n: number, t: number): unknown }).wait(this.replicas, this.timeoutMs);
    const [[callError, reply] = [null, null], [waitError, acked] = [null, 0]] = (await pipeline.exec()) ?? [];
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
