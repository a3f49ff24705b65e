import { Cluster } from 'ioredis';
import t from 'tap';
import { holdsLibrary } from '../../src/redis/library.js';
import { coreFlow, type FlowLicense } from '../helpers/coreFlow.js';
import { LIVE_COUNTS, startHarness } from '../helpers/harness.js';
import { startRedisCluster } from '../helpers/processes.js';

// The same scripts on a three-master Redis Cluster: every key of one script call shares one
// slot, licenses spread over the masters, and the worker reads every stream on every node.
// The flow itself is test/helpers/coreFlow.ts, which test/system/flow.test.ts runs on a
// single Redis; slots moving under it: cluster.reshard.test.ts.

t.test('the whole flow on a three-master Redis Cluster', async (t) => {
  const cluster = await startRedisCluster(t); // its teardown runs last, after the service stopped
  const client = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
  client.on('error', () => {});
  t.teardown(() => client.disconnect());

  // history's limit on (the flow reads history once), so its script runs on the Cluster too
  const h = await startHarness(t, 'cluster', { ...LIVE_COUNTS, RATE_HISTORY_PER_MIN: '100', REDIS_CLUSTER_NODES: cluster.nodes });

  // /readyz loads the scripts' library on every master when it is missing
  const masters = client.nodes('master');
  await Promise.all(masters.map((m) => m.call('FUNCTION', 'FLUSH')));
  t.same(await Promise.all(masters.map(holdsLibrary)), masters.map(() => false), 'FUNCTION FLUSH: no master holds the library');
  const ready = await h.request('GET', '/readyz');
  t.same([ready.status, ready.body], [200, { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok' }], '/readyz on the Cluster');
  t.same(await Promise.all(masters.map(holdsLibrary)), masters.map(() => true), 'the library on every master again');

  /** The port of the master that holds a key (the key must exist). */
  async function holderOf(key: string): Promise<number | null> {
    if ((await client.exists(key)) !== 1) return null;
    const slot = Number(await client.cluster('KEYSLOT', key));
    const owner = client.slots[slot]?.[0]; // "host:port" of the master serving the slot
    return owner === undefined ? null : Number(owner.split(':')[1]);
  }

  // licenses until they live on every master (firma ids are random, so the slots are too)
  const licenses: FlowLicense[] = [];
  const holders = new Set<number>();
  while ((holders.size < cluster.ports.length || licenses.length < 4) && licenses.length < 40) {
    const total = 3 + (licenses.length % 3);
    const lic = await h.createLicense({ totalQuota: total });
    licenses.push({ ...lic, total });
    const port = await holderOf(h.keys.forLicense(lic.firmaId).license);
    t.not(port, null, 'the license copy is written to the cluster');
    if (port !== null) holders.add(port);
  }
  t.equal(holders.size, cluster.ports.length, 'licenses live on all three masters');
  t.equal(await h.redis.exists(h.keys.forLicense(licenses[0]?.firmaId as string).license), 0,
    'nothing is written to the single Redis at REDIS_URL');

  await coreFlow(t, h, licenses);
});
