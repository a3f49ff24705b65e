import { pino } from 'pino';
import t from 'tap';
import { KnownKeys } from '../../src/licenses/knownKeys.js';
import { HotLicenses } from '../../src/licenses/hot.js';
import { LicenseStore } from '../../src/licenses/store.js';
import { createRedis } from '../../src/redis/client.js';
import { RedisRestarts } from '../../src/redis/restarts.js';
import { ForfeitSweep } from '../../src/usage/forfeitSweep.js';
import { ADMIN_TOKEN, LIVE_COUNTS, startHarness, type TestLicense } from '../helpers/harness.js';
import { getTokenPair } from '../helpers/tokens.js';
import { sleep } from '../helpers/wait.js';

// The forfeit sweep (src/usage/forfeitSweep.ts) names the packages Postgres shows expired with
// units left. One whose units Redis has already spent (spends the worker has not written yet,
// or buried as dead letters) is named on every pass and forfeits nothing: as many of those as
// a pass takes must not keep the packages after them from being swept. The service runs no
// usage worker here (RUN_WORKER=0): its spends stay in the streams, and the test runs a sweep
// of its own that names two packages a pass.

const h = await startHarness(t, 'forfeit-sweep', { ...LIVE_COUNTS, RUN_WORKER: '0' });
const redis = createRedis(h.config, 'test-sweep');
t.teardown(() => redis.quit());
const log = pino({ level: 'silent' });
const hot = new HotLicenses(redis, h.keys, new LicenseStore(h.sql), new KnownKeys(h.sql), 0, new RedisRestarts(redis, h.keys, log));
const sweep = new ForfeitSweep(h.sql, hot, log, 60_000, 2);

const addQuota = (lic: TestLicense, add: number, expiresAt: number) => h.request('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`,
  { add, expiresAt: new Date(expiresAt).toISOString() }, { authorization: `Bearer ${ADMIN_TOKEN}` });
const liveTotal = async (lic: TestLicense): Promise<number> =>
  (await h.request('GET', `/admin/v1/licenses/${lic.licenseKey}`, undefined, { authorization: `Bearer ${ADMIN_TOKEN}` })).body.data.totalQuota as number;

t.test('packages the sweep cannot forfeit do not hold back those after them', async (t) => {
  // the licenses and their sign tokens first (a login hashes a password: slow on a busy
  // machine), so the short packages are bought and spent well before they expire
  const spent: { lic: TestLicense; signToken: string }[] = [];
  for (let i = 0; i < 3; i++) {
    const lic = await h.createLicense({ totalQuota: 5 });
    spent.push({ lic, signToken: (await getTokenPair(h, lic)).signToken });
  }
  const idle = await h.createLicense({ totalQuota: 5 });
  const expiry = Date.now() + 5_000;
  // three licenses whose expiring package Redis has spent (a unit each), Postgres not yet
  for (const [i, { lic, signToken }] of spent.entries()) {
    t.equal((await addQuota(lic, 1, expiry + i)).status, 200);
    t.equal((await h.validate(signToken)).status, 200, 'its package\'s one unit spent');
  }
  // then one nobody uses, whose package expires after theirs with 4 units left
  t.equal((await addQuota(idle, 4, expiry + 10)).status, 200);
  t.equal(await liveTotal(idle), 9);
  await sleep(expiry + 10 - Date.now() + 100);

  for (let pass = 0; pass < 3; pass++) await sweep.pass();
  t.equal(await liveTotal(idle), 5, 'the idle license\'s package forfeited its 4 units');
  for (const { lic } of spent) t.equal(await liveTotal(lic), 6, 'a spent package forfeits nothing');
});
