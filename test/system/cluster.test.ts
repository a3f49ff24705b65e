import { Cluster } from 'ioredis';
import { createHash } from 'node:crypto';
import t from 'tap';
import { allScriptSources } from '../../src/redis/scripts.js';
import { LIVE_COUNTS, startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { startRedisCluster } from '../helpers/processes.js';
import { mintTokens } from '../helpers/tokens.js';
import { MSG } from '../helpers/shapes.js';

// The same scripts on a three-master Redis Cluster: every key of one script call shares one
// slot, licenses spread over the masters, and the worker reads every stream on every node.

t.test('the whole flow on a three-master Redis Cluster', async (t) => {
  const cluster = await startRedisCluster(t); // its teardown runs last, after the service stopped
  const client = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
  client.on('error', () => {});
  t.teardown(() => client.disconnect());

  const h = await startHarness(t, 'cluster', { ...LIVE_COUNTS, REDIS_CLUSTER_NODES: cluster.nodes });

  // /readyz loads the scripts on every master when they are missing
  const masters = client.nodes('master');
  await Promise.all(masters.map((m) => m.script('FLUSH')));
  const ready = await h.request('GET', '/readyz');
  t.same([ready.status, ready.body], [200, { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok' }], '/readyz on the Cluster');
  const shas = allScriptSources().map((lua) => createHash('sha1').update(lua).digest('hex'));
  for (const m of masters) {
    t.same(await m.script('EXISTS', ...shas), shas.map(() => 1), `every script on master ${m.options.port}`);
  }

  /** The port of the master that holds a key (the key must exist). */
  async function holderOf(key: string): Promise<number | null> {
    if ((await client.exists(key)) !== 1) return null;
    const slot = Number(await client.cluster('KEYSLOT', key));
    const owner = client.slots[slot]?.[0]; // "host:port" of the master serving the slot
    return owner === undefined ? null : Number(owner.split(':')[1]);
  }

  // licenses until they live on every master (firma ids are random, so the slots are too)
  const licenses: { licenseKey: string; firmaId: string; password: string; total: number }[] = [];
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

  const redeemed = new Map<string, string[]>();
  for (const lic of licenses) {
    const { tokens } = await mintTokens(h, lic, lic.total + 1, licenses.indexOf(lic) % 2);
    const answers = [];
    for (const token of tokens) answers.push(await h.validate(token, 'https://cluster.example'));
    t.same(
      answers.map((a) => a.status),
      [...Array.from({ length: lic.total }, () => 200), 400],
      'every unit redeems once, then quota is exhausted',
    );
    t.same(answers.map((a) => a.body.usedQuota).slice(0, lic.total), Array.from({ length: lic.total }, (_, i) => i + 1));
    t.same(answers[lic.total]?.body, { success: false, message: MSG.QUOTA, remainingQuota: 0 });
    const reused = await h.validate(tokens[0]);
    t.same(reused.body, { success: false, message: MSG.USED });
    redeemed.set(lic.firmaId, tokens.slice(0, lic.total).map((tok) => claimsOf(tok).token_id).sort());

    const quota = await h.checkQuota(lic.licenseKey);
    t.equal(quota.status, 429);
    t.same(quota.body.data, { remainingQuota: 0, totalQuota: lic.total, usedQuota: lic.total });
  }

  // one license with quota left shows a 200 check-quota
  const extra = await h.createLicense({ totalQuota: 5 });
  const got = await h.getToken(extra.licenseKey, extra.password, 1);
  t.equal((await h.validate(got.body.signToken)).body.usedQuota, 1);
  const quota = await h.checkQuota(extra.licenseKey);
  t.equal(quota.status, 200);
  t.equal(quota.body.data.usedQuota, 1);
  t.equal(quota.body.data.remainingQuota, 4);

  // a burst of one license: the requests of one turn go to its slot's master as one
  // redeem.lua call, routed by the Cluster client like any other
  const burst = (await mintTokens(h, extra, 12)).tokens;
  const burstAnswers = await Promise.all(burst.map((token) => h.validate(token)));
  t.same(burstAnswers.filter((a) => a.status === 200).map((a) => a.body.usedQuota as number).sort((a, b) => a - b), [2, 3, 4, 5],
    'a parallel burst on the cluster spends exactly the 4 units left');
  t.equal(burstAnswers.filter((a) => a.status === 400 && a.body.message === MSG.QUOTA).length, 8, 'the other 8 are refused');

  await h.drainWorker(20_000);
  for (const lic of licenses) {
    const [row] = await h.sql`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
    t.equal(row?.used, lic.total, `Postgres used_quota of ${lic.firmaId}`);
    const rows = await h.sql`
      select token_id, status, origin from sign_tokens where firma_id = ${lic.firmaId} order by token_id`;
    t.equal(rows.length, lic.total + 1, 'every issued token persisted');
    t.same(rows.filter((r) => r.status === 'used').map((r) => r.token_id), redeemed.get(lic.firmaId));
    t.ok(rows.filter((r) => r.status === 'used').every((r) => r.origin === 'https://cluster.example'));
  }
  const [extraRow] = await h.sql`select used_quota::int as used from licenses where firma_id = ${extra.firmaId}`;
  t.equal(extraRow?.used, 5);
});
