import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { createRedis, whenReady } from '../../src/redis/client.js';
import { failoverScenario } from '../helpers/faults/failoverScenario.js';
import { NO_RATE_LIMITS, startHarness, testEnv } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { killMasterAndResume, cutReplicas, startReplicatedRedis, startSentinels } from '../helpers/redisHa.js';

// The service on Sentinel (REDIS_SENTINELS, REDIS_SENTINEL_MASTER, the sentinels' and the
// nodes' passwords): a master, two replicas and three sentinels. Both replicas are cut off,
// the window's redemptions (validate, sign, releases beside them) are answered by the master
// alone, the master is SIGKILLed and the sentinels promote a replica that lacks them. The
// service finds the new master through the sentinels by itself, and fences it before any
// script runs there (src/redis/restarts.ts): no token redeems twice, the books agree.

t.test('Sentinel: the master SIGKILLed under load, a replica promoted without the window: fenced, no token redeems twice', { timeout: 150_000 }, async (t) => {
  const redis = await startReplicatedRedis(t, { replicas: 2, appendfsync: 'everysec', password: 'node-secret' });
  const sentinels = await startSentinels(t, redis, { count: 3, quorum: 2, downAfterMs: 1000, requirepass: 'sentinel-secret' });
  const h = await startHarness(t, 'ha-sentinel', {
    REDIS_SENTINELS: sentinels.addresses.map((a) => `${a.host}:${a.port}`).join(','),
    REDIS_SENTINEL_MASTER: sentinels.name, REDIS_SENTINEL_PASSWORD: 'sentinel-secret', REDIS_PASSWORD: 'node-secret',
    ...NO_RATE_LIMITS, WORKER_CLAIM_IDLE_MS: '1000',
  });
  const licenses = [await h.createLicense({ totalQuota: 1000, releasesPerDay: 100 }), await h.createLicense({ totalQuota: 1000, releasesPerDay: 100 })];
  const oldMaster = redis.master;
  await failoverScenario(t, h, licenses, async (windowLoad) => {
    await redis.waitInSync();
    const cut = await cutReplicas(oldMaster, redis.replicas);
    await windowLoad();
    await killMasterAndResume(cut);
    const promoted = await sentinels.waitForPromotion(oldMaster);
    t.not(promoted.port, oldMaster.port, `the sentinels promoted the replica on ${promoted.port}`);
  });
});

// The failover detector (failoverDetector: true) closes the connector when the sentinels
// announce a new master. When that lands while the client is reconnecting (the old master
// just died), ioredis fails the connect in progress and ends the client for good: seen once
// on a loaded machine. Here the detector's step is taken by hand at that very moment.
t.test('a Sentinel client whose reconnection the failover detector cuts short connects again', { timeout: 60_000 }, async (t) => {
  const redis = await startReplicatedRedis(t, { replicas: 1, password: 'node-secret' });
  const sentinels = await startSentinels(t, redis, { count: 1, quorum: 1, requirepass: 'sentinel-secret' });
  const config = loadConfig(testEnv('ha-sentinel-race', {
    REDIS_SENTINELS: sentinels.addresses.map((a) => `${a.host}:${a.port}`).join(','),
    REDIS_SENTINEL_MASTER: sentinels.name, REDIS_SENTINEL_PASSWORD: 'sentinel-secret', REDIS_PASSWORD: 'node-secret',
  }));
  const client = createRedis(config, 'failover-race');
  t.teardown(() => client.disconnect());
  await whenReady(client, 10_000);
  let cut = false;
  client.on('connecting', () => {
    if (cut) return;
    cut = true;
    (client as unknown as { connector: { disconnect(): void } }).connector.disconnect();
  });
  const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
  client.disconnect(true); // the connection drops, as when the master dies; the client reconnects
  await ended;
  t.ok(cut, 'the reconnection was cut short while it asked the sentinels');
  await waitFor('the client to be ready again', async () => client.status === 'ready', 10_000, 20);
  t.equal(await client.ping(), 'PONG', 'and it answers');
});
