import { Cluster, Redis } from 'ioredis';
import t from 'tap';
import {
  call, counterLost, loseWritesOnFailover, parseInfo, partitionUnavailable, startReplicatedCluster, startReplicatedRedis,
  startSentinels, startVip, writtenOffLost, type ReplicatedRedis,
} from '../helpers/redisHa.js';
import { pollUntil, waitFor } from '../helpers/wait.js';

// The HA helpers (test/helpers/redisHa.ts) on real topologies: for each, a counter is set
// to 0 and replicated, the replica that will be promoted is cut off, the counter is
// incremented to 1..N on the master (each increment acknowledged), the master is SIGKILLed
// and the replica promoted: by hand behind a VIP, by Sentinel, by the Cluster. The new
// master must read 0, so a service whose state lives in Redis sees acknowledged writes
// vanish (a token redeemed during the window redeems again, unless the service fences).
// The Sentinel and Cluster clients (ioredis) must find the new master by themselves. Last,
// a Cluster partition: the master cut off by iptables takes writes until it sees it is
// alone, its replica is promoted on the majority side, and after healing the old master
// is a replica of the new one with the writes of the partition gone.

const KEY = 'ha:counter';
const N = 20;
const ONE_TO_N = Array.from({ length: N }, (_, i) => i + 1);

/** The counter incremented N times through `client` while the first replica is cut off, then the master killed. */
async function incrementsLost(redis: ReplicatedRedis, client: Redis) {
  const [oldMaster, replica] = [redis.master, redis.replicas[0]];
  if (!replica) throw new Error('no replica');
  const acknowledged: number[] = [];
  const window = await loseWritesOnFailover(oldMaster, [replica], async () => {
    for (let i = 0; i < N; i++) acknowledged.push(await client.incr(KEY));
  });
  return { oldMaster, replica, acknowledged, window };
}

/** Milliseconds since `from`, for the comments. */
const since = (from: number) => Date.now() - from;

t.test('a master and a replica behind a VIP, promoted by hand: the writes of the cut are lost', { timeout: 30_000 }, async (t) => {
  const begun = Date.now();
  const redis = await startReplicatedRedis(t, { replicas: 1, appendfsync: 'everysec' });
  const vip = await startVip(t, redis.master.port);
  const client = new Redis(vip.port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  client.on('error', () => {});
  t.teardown(() => client.disconnect());
  await client.set(KEY, '0');
  await redis.waitInSync();
  const started = since(begun);

  const failing = Date.now();
  const { oldMaster, replica, acknowledged, window } = await incrementsLost(redis, client);
  t.same(acknowledged, ONE_TO_N, `the master acknowledged counter = 1..${N} through the VIP`);
  await redis.promote(replica);
  vip.switchTo(replica.port);
  const seen = await pollUntil(() => client.get(KEY).catch(() => 'error'), (v) => v !== 'error', { timeoutMs: 5000 });
  const failover = since(failing);
  t.equal(seen, '0', 'through the VIP, the promoted replica reads the counter as before the cut');
  t.equal(await counterLost(replica, KEY, '0'), '0', 'counterLost: the promoted node misses every increment of the cut');
  const lost = await writtenOffLost(replica, window);
  t.ok(lost.lostBytes > 0, `writtenOffLost: ${lost.lostBytes} bytes of replication stream never reached it`);
  t.equal(Number(parseInfo(await client.info('server')).tcp_port), replica.port, 'the VIP leads to the promoted node');
  t.equal(await client.incr(KEY), 1, 'the next increment answers 1 again: a value already acknowledged before the failover');

  // switchTo drops the connections it forwards: the client sees its connection end and reconnects
  t.equal(vip.connections, 1, 'one connection through the VIP');
  const closed = new Promise((resolve) => client.once('close', resolve));
  vip.switchTo(replica.port);
  t.equal(vip.connections, 0, 'switchTo dropped it at once');
  await closed;
  t.equal(await client.get(KEY), '1', 'the client reconnected through the VIP');

  // the old master comes back from its AOF, which holds counter = N, as a replica: it drops them
  await redis.rejoin(oldMaster);
  t.equal(await oldMaster.call('GET', KEY), '1', 'the old master, restarted as a replica, holds the new master\'s value');
  t.comment(`VIP: started in ${started} ms; cut, ${N} writes, kill, promotion and the client back in ${failover} ms`);
});

t.test('Sentinel fails the master over: the writes of the cut are lost, and a Sentinel client finds the new master', { timeout: 45_000 }, async (t) => {
  const begun = Date.now();
  const redis = await startReplicatedRedis(t, { replicas: 1, password: 'node-secret' });
  const sentinels = await startSentinels(t, redis, { count: 3, quorum: 2, downAfterMs: 1000, requirepass: 'sentinel-secret' });
  const started = since(begun);

  const [first] = sentinels.addresses;
  if (!first) throw new Error('no sentinel');
  await t.rejects(call(first, ['SENTINEL', 'MASTERS']), /NOAUTH/, 'a sentinel refuses a client without its password');
  await t.rejects(call(first, ['PING'], { password: 'node-secret' }), /WRONGPASS|invalid/i, 'nor with the nodes\' password');
  await t.rejects(call(redis.master, ['PING']), /NOAUTH/, 'the nodes ask for theirs');
  t.same(await sentinels.views(), [1, 2, 3].map(() => ({ host: '127.0.0.1', port: redis.master.port })), 'every sentinel names the master');

  const client = new Redis({
    sentinels: sentinels.addresses, name: sentinels.name, password: 'node-secret', sentinelPassword: 'sentinel-secret',
    maxRetriesPerRequest: 1,
  });
  client.on('error', () => {});
  t.teardown(() => client.disconnect());
  await client.set(KEY, '0');
  await redis.waitInSync();

  const failing = Date.now();
  const { oldMaster, replica, acknowledged, window } = await incrementsLost(redis, client);
  t.same(acknowledged, ONE_TO_N, `the master acknowledged counter = 1..${N} through the Sentinel client`);
  const promoted = await sentinels.waitForPromotion(oldMaster);
  const promotion = since(failing);
  t.same(promoted, { host: '127.0.0.1', port: replica.port }, 'the sentinels name the replica');
  t.equal(await redis.findMaster(), replica, 'the replica is the only master');
  t.equal(await counterLost(replica, KEY, '0'), '0', 'counterLost: the promoted node misses every increment of the cut');
  const lost = await writtenOffLost(replica, window);
  t.ok(lost.lostBytes > 0, `writtenOffLost: ${lost.lostBytes} bytes of replication stream never reached it`);
  const seen = await pollUntil(() => client.get(KEY).catch(() => 'error'), (v) => v !== 'error', { timeoutMs: 10_000 });
  t.equal(seen, '0', 'the Sentinel client reads the promoted node');
  t.equal(Number(parseInfo(await client.info('server')).tcp_port), replica.port, 'the Sentinel client is connected to the promoted node');
  t.comment(`Sentinel: started in ${started} ms; cut, ${N} writes and kill to promotion ${promotion} ms, the client back ${since(failing)} ms`);
});

t.test('a Cluster with replicas fails the master over: the writes of the cut are lost, and a Cluster client finds the new master', { timeout: 45_000 }, async (t) => {
  const begun = Date.now();
  const cluster = await startReplicatedCluster(t, { masters: 3, replicasPerMaster: 1 });
  const started = since(begun);
  const client = new Cluster(cluster.addresses, { redisOptions: { maxRetriesPerRequest: 1 } });
  client.on('error', () => {});
  t.teardown(() => client.disconnect());
  const slot = await cluster.slotOf(KEY);
  const shard = await cluster.shardOf(slot);
  const [replica] = shard.replicas;
  if (!replica) throw new Error(`no replica of ${shard.master.name}`);
  await client.set(KEY, '0');
  await cluster.waitHealthy();

  const failing = Date.now();
  const acknowledged: number[] = [];
  const window = await loseWritesOnFailover(shard.master, [replica], async () => {
    for (let i = 0; i < N; i++) acknowledged.push(await client.incr(KEY));
  });
  t.same(acknowledged, ONE_TO_N, `the master of slot ${slot} acknowledged counter = 1..${N} through the Cluster client`);
  const promoted = await cluster.waitForPromotion(slot); // from the master waitHealthy saw: shard.master
  const promotion = since(failing);
  t.equal(promoted, replica, `the cluster promoted ${replica.name}, the replica of ${shard.master.name}`);
  t.equal(await counterLost(promoted, KEY, '0'), '0', 'counterLost: the promoted node misses every increment of the cut');
  const lost = await writtenOffLost(promoted, window);
  t.ok(lost.lostBytes > 0, `writtenOffLost: ${lost.lostBytes} bytes of replication stream never reached it`);
  const seen = await pollUntil(() => client.get(KEY).catch(() => 'error'), (v) => v !== 'error', { timeoutMs: 10_000 });
  const back = since(failing);
  t.equal(seen, '0', 'the Cluster client reads the promoted node');
  t.same(client.slots[slot]?.[0], promoted.address, 'the Cluster client routes the slot to the promoted node');

  // the old master started again (its nodes.conf kept) rejoins as a replica of the promoted node
  const restarting = Date.now();
  await shard.master.restart();
  await cluster.waitReplicaOf(shard.master, promoted);
  await cluster.waitHealthy();
  const rejoined = since(restarting);
  t.equal(await shard.master.command(['GET', KEY], { before: [['READONLY']] }), '0', 'the old master, restarted, is a replica of the promoted node');
  t.comment(`Cluster kill: started in ${started} ms; cut, ${N} writes and kill to promotion ${promotion} ms, the client back ` +
    `${back} ms; the old master restarted, an in-sync replica in ${rejoined} ms`);
});

t.test('a Cluster master cut off by a partition: its replica is promoted, and after healing the old master is its replica, the writes of the partition gone', { timeout: 45_000 }, async (t) => {
  const unavailable = await partitionUnavailable();
  if (unavailable) {
    t.fail(unavailable);
    return;
  }
  const begun = Date.now();
  const cluster = await startReplicatedCluster(t, { masters: 3, replicasPerMaster: 1 });
  const started = since(begun);
  const slot = await cluster.slotOf(KEY);
  const shard = await cluster.shardOf(slot);
  const [replica] = shard.replicas;
  if (!replica) throw new Error(`no replica of ${shard.master.name}`);
  await shard.master.call('SET', KEY, '0');
  await cluster.waitHealthy();

  const cutAt = Date.now();
  const partition = await cluster.partition(shard.master);
  const acknowledged: number[] = [];
  for (let i = 0; i < N; i++) acknowledged.push(await shard.master.call('INCR', KEY) as number);
  t.same(acknowledged, ONE_TO_N, `the cut-off master acknowledged counter = 1..${N} (its side's clients still reach it)`);
  await waitFor(`${shard.master.name} to see it is in a minority (cluster_state:fail)`,
    async () => String(await shard.master.call('CLUSTER', 'INFO')).includes('cluster_state:fail'), 10_000, 50);
  const alone = since(cutAt);
  await t.rejects(shard.master.call('INCR', KEY), /CLUSTERDOWN/, 'then it refuses writes');
  const promoted = await cluster.waitForPromotion(slot, shard.master);
  const promotion = since(cutAt);
  t.equal(promoted, replica, `the majority promoted ${replica.name}, the replica of the cut-off master`);
  t.equal(await counterLost(promoted, KEY, '0'), '0', 'counterLost: the promoted node misses every increment of the partition');

  const healing = Date.now();
  await partition.heal();
  await cluster.waitReplicaOf(shard.master, promoted);
  const rejoined = since(healing);
  // a node back from a minority keeps cluster_state:fail for a while (its rejoin delay): reads wait for ok
  await cluster.waitHealthy();
  t.equal(await shard.master.command(['GET', KEY], { before: [['READONLY']] }), '0', 'the old master, now a replica, dropped the writes it acknowledged');
  const client = new Cluster(cluster.addresses, { redisOptions: { maxRetriesPerRequest: 1 } });
  client.on('error', () => {});
  t.teardown(() => client.disconnect());
  t.equal(await client.incr(KEY), 1, 'the next increment answers 1 again: a value already acknowledged during the partition');
  t.comment(`Cluster partition: started in ${started} ms; the cut-off master alone after ${alone} ms, promotion ${promotion} ms, ` +
    `healed: a replica in sync ${rejoined} ms later`);
});
