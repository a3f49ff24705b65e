import t from 'tap';
import type { Test } from 'tap';
import { failoverScenario } from '../helpers/faults/failoverScenario.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { loseWritesOnFailover, startReplicatedRedis, writtenOffLost, type Appendfsync } from '../helpers/redisHa.js';
import { startVipProcess } from '../helpers/ha/vip.js';
import { pollUntil } from '../helpers/wait.js';

// One Redis and its replica behind a TCP proxy standing for a virtual IP, failed over by
// hand the way it loses writes (test/helpers/ha/loseWrites.ts): the replica cut off, the
// window's redemptions answered by the master alone, the master SIGKILLed, the replica
// promoted and the VIP moved to it. Whatever the master's fsync setting the promoted
// replica lacks the window, and the service must notice the new server before it runs a
// script there (src/redis/restarts.ts). With REDIS_WAIT_REPLICAS=1 (and two replicas, both
// cut off, the second following the promoted one after) nothing is answered 200 that a
// replica does not hold: the window's redemptions answer 503 and none is lost.

async function vipFailover(t: Test, label: string, appendfsync: Appendfsync, waitReplicas: number): Promise<void> {
  // waiting for a replica needs one after the failover too: the other replica follows the promoted one
  const redis = await startReplicatedRedis(t, { replicas: waitReplicas > 0 ? 2 : 1, appendfsync });
  const vip = await startVipProcess(t, redis.master.port);
  const h = await startHarness(t, label, {
    REDIS_URL: vip.url, ...NO_RATE_LIMITS, WORKER_CLAIM_IDLE_MS: '1000',
    ...(waitReplicas > 0 ? { REDIS_WAIT_REPLICAS: String(waitReplicas) } : {}),
  });
  const licenses = [await h.createLicense({ totalQuota: 1000, releasesPerDay: 100 }), await h.createLicense({ totalQuota: 1000, releasesPerDay: 100 })];
  const replica = redis.replicas[0];
  if (!replica) throw new Error('no replica');
  /** /readyz's replicas member once it is `want` (it may be a second old), or the last seen */
  const replicasSaid = async (want: string) => (await pollUntil(() => h.request('GET', '/readyz'),
    (r) => (r.body as { replicas?: string }).replicas === want, { timeoutMs: 10_000, intervalMs: 200 })).body;
  if (waitReplicas > 0) {
    await redis.waitInSync();
    t.match(await replicasSaid('ok'), { success: true, replicas: 'ok' }, '/readyz: the replicas to wait for are online');
  }
  const result = await failoverScenario(t, h, licenses, async (windowLoad) => {
    await redis.waitInSync();
    const window = await loseWritesOnFailover(redis.master, redis.replicas, async () => {
      if (waitReplicas > 0) t.match(await replicasSaid('missing'), { success: true, replicas: 'missing' }, '/readyz: replicas missing while they are cut off, still ready');
      await windowLoad();
    });
    await redis.promote(replica);
    await vip.switchTo(replica.port);
    t.ok((await writtenOffLost(replica, window)).lostBytes > 0, 'the promoted replica lacks the writes of the window');
    if (waitReplicas > 0) await redis.waitInSync();
  });
  if (waitReplicas > 0) {
    t.match(await replicasSaid('ok'), { success: true, replicas: 'ok' }, '/readyz: replicas online again after the failover');
    t.same(result.window.filter((a) => a.status === 200).length, 0, 'REDIS_WAIT_REPLICAS=1: no redemption answered 200 while the replica was cut off');
    t.same(result.lost, [], 'so none answered 200 was lost');
  }
}

t.test('VIP, appendfsync always: the failover is fenced, no token redeems twice', { timeout: 120_000 },
  (t) => vipFailover(t, 'ha-vip-always', 'always', 0));
t.test('VIP, appendfsync everysec: the failover is fenced, no token redeems twice', { timeout: 120_000 },
  (t) => vipFailover(t, 'ha-vip-everysec', 'everysec', 0));
t.test('VIP with REDIS_WAIT_REPLICAS=1: nothing answered 200 is lost', { timeout: 120_000 },
  (t) => vipFailover(t, 'ha-vip-wait', 'everysec', 1));
