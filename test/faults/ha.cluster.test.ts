import t from 'tap';
import type { Test } from 'tap';
import { failoverScenario } from '../helpers/faults/failoverScenario.js';
import { NO_RATE_LIMITS, startHarness, type Harness, type TestLicense } from '../helpers/harness.js';
import { cutReplicas, killMasterAndResume, partitionUnavailable, startReplicatedCluster, type ReplicatedCluster } from '../helpers/redisHa.js';
import type { RedisNode } from '../helpers/ha/node.js';
import { waitFor } from '../helpers/wait.js';

// The service on a Redis Cluster of three masters and three replicas. Two ways a shard's
// master is replaced by a replica that lacks the last writes, each under the window's load
// (validate, sign, releases beside them) on licenses of that shard:
//  - SIGKILL: the replica cut off first, the master killed, the cluster promotes the replica;
//  - a partition (iptables): the master cut off from the other nodes, not from the service,
//    keeps answering until it sees it is alone; the majority promotes its replica; healed,
//    the old master rejoins as a replica and drops what it took alone.
// Every shard's buckets are fenced (src/redis/restarts.ts): no token redeems twice.

/** Licenses of the shard of `master` (firma ids are random: made until n land there, 60 at most). */
async function licensesOn(h: Harness, cluster: ReplicatedCluster, n: number): Promise<{ master: RedisNode; licenses: TestLicense[] }> {
  const first = await h.createLicense({ totalQuota: 1000, releasesPerDay: 100 });
  const { master } = await cluster.shardOf(h.keys.forLicense(first.firmaId).stream);
  const licenses = [first];
  for (let i = 0; licenses.length < n && i < 60; i++) {
    const lic = await h.createLicense({ totalQuota: 1000, releasesPerDay: 100 });
    if ((await cluster.shardOf(h.keys.forLicense(lic.firmaId).stream)).master === master) licenses.push(lic);
  }
  return { master, licenses };
}

async function clusterHarness(t: Test, label: string): Promise<{ cluster: ReplicatedCluster; h: Harness }> {
  const cluster = await startReplicatedCluster(t, { masters: 3, replicasPerMaster: 1, appendfsync: 'everysec' });
  const h = await startHarness(t, label, { REDIS_CLUSTER_NODES: cluster.nodes, ...NO_RATE_LIMITS, WORKER_CLAIM_IDLE_MS: '1000' });
  return { cluster, h };
}

t.test('Cluster: a master SIGKILLed after its replica was cut off: fenced, no token redeems twice', { timeout: 150_000 }, async (t) => {
  const { cluster, h } = await clusterHarness(t, 'ha-cluster-kill');
  const { master, licenses } = await licensesOn(h, cluster, 2);
  const slot = await cluster.slotOf(h.keys.forLicense((licenses[0] as TestLicense).firmaId).stream);
  await failoverScenario(t, h, licenses, async (windowLoad) => {
    await cluster.waitHealthy();
    const { replicas } = await cluster.shardOf(slot);
    const cut = await cutReplicas(master, replicas);
    await windowLoad();
    await killMasterAndResume(cut);
    const promoted = await cluster.waitForPromotion(slot, master);
    t.not(promoted, master, `the cluster promoted ${promoted.name}`);
  });
});

t.test('Cluster: a master cut off by a partition, its replica promoted, the partition healed: fenced, no token redeems twice', { timeout: 150_000 }, async (t) => {
  const unavailable = await partitionUnavailable();
  if (unavailable) {
    t.fail(unavailable);
    return;
  }
  const { cluster, h } = await clusterHarness(t, 'ha-cluster-partition');
  const { master, licenses } = await licensesOn(h, cluster, 2);
  const slot = await cluster.slotOf(h.keys.forLicense((licenses[0] as TestLicense).firmaId).stream);
  await failoverScenario(t, h, licenses, async (windowLoad) => {
    await cluster.waitHealthy();
    const partition = await cluster.partition(master);
    await windowLoad(); // the cut-off master still answers the service until it sees it is alone
    const promoted = await cluster.waitForPromotion(slot, master);
    t.not(promoted, master, `the majority promoted ${promoted.name}`);
    await partition.heal();
    await cluster.waitReplicaOf(master, promoted);
    await waitFor('a healthy cluster after healing', async () => { await cluster.waitHealthy(); return true; }, 40_000);
  });
});
