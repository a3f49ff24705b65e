import { randomBytes } from 'node:crypto';
import t from 'tap';
import { LIVE_COUNTS, startHarness, type Harness } from '../helpers/harness.js';
import { spawnWorker } from '../helpers/processes.js';
import { MSG } from '../helpers/shapes.js';
import { mintTokens } from '../helpers/tokens.js';
import { waitForLockWait } from '../helpers/wait.js';
import { LicenseStore } from '../../src/licenses/store.js';
import { EventKind, LicenseField } from '../../src/redis/fields.js';

// Redis holds only a hot copy: when it is lost (after the worker has drained) the service
// rebuilds it from Postgres and carries on with the right counts and token states.

const USED = { success: false, message: MSG.USED };

async function pgUsed(h: Harness, firmaId: string): Promise<number | undefined> {
  const [row] = await h.sql`select used_quota::int as used from licenses where firma_id = ${firmaId}`;
  return row?.used;
}

// one service for the file (but the test that stops the worker), each test on licenses of its own
const h = await startHarness(t, 'hydrate', LIVE_COUNTS);

t.test('the service carries on after every Redis key is lost', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, organizationName: 'Hidrasyon A.Ş.' });
  const other = await h.createLicense({ totalQuota: 3 });
  const { accessToken, tokens } = await mintTokens(h, lic, 4, 0);
  const [spent1, spent2, kept1, kept2] = tokens as [string, string, string, string];
  t.equal((await h.validate(spent1)).body.usedQuota, 1);
  const second = await h.validate(spent2, 'https://before.example');
  t.same(second.body, { success: true, message: second.body.message, usedQuota: 2, remainingQuota: 8 });
  await h.drainWorker();
  t.equal(await pgUsed(h, lic.firmaId), 2);

  await h.flushRedis();
  // the worker makes its (empty) usage streams and their group again as it reads them: those
  // may be back already, and hold nothing
  const left = [];
  for (const key of await h.redis.keys(`${h.prefix}:*`)) {
    if (await h.redis.type(key) !== 'stream' || await h.redis.xlen(key) > 0) left.push(key);
  }
  t.same(left, [], 'no key of the service is left in Redis');

  // every token outstanding before the loss is refused, redeemed or not: Redis cannot
  // prove any of them unused (a redemption may have been lost with it), so none redeems twice
  for (const [token, origin] of [[spent1], [spent2, 'https://before.example'], [kept1], [kept2]] as const) {
    const again = await h.validate(token, origin);
    t.equal(again.status, 400);
    t.same(again.body, USED);
  }

  // check-quota and get-token work with the credentials re-hydrated, counting from Postgres
  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.status, 200);
  t.same(
    { ...quota.body.data },
    {
      licenseKey: lic.licenseKey, remainingQuota: 8, totalQuota: 10, usedQuota: 2, quotaPercentage: 80,
      expiryDate: quota.body.data.expiryDate, isActive: true, organizationName: 'Hidrasyon A.Ş.',
    },
  );
  const fresh = await h.getToken(lic.licenseKey, lic.password, 1);
  t.equal(fresh.status, 200, 'get-token after the flush');
  t.equal(fresh.body.remainingQuota, 8);
  const wrong = await h.getToken(lic.licenseKey, 'wrong password', 1);
  t.equal(wrong.status, 401, 'the re-hydrated credentials still refuse a wrong password');
  t.equal(wrong.body.error.code, 'INVALID_CREDENTIALS');
  const viaAccess = await h.signToken(accessToken, 0);
  t.equal(viaAccess.status, 200, 'sign-token with an access token issued before the flush');

  const r3 = await h.validate(fresh.body.signToken);
  t.equal(r3.body.usedQuota, 3);
  const r4 = await h.validate(viaAccess.body.signToken);
  t.equal(r4.body.usedQuota, 4);
  t.equal(r4.body.remainingQuota, 6);
  t.same((await h.validate(fresh.body.signToken)).body, USED, 'a token issued after the loss still redeems once');

  // a license never touched before the flush hydrates on its first use
  const otherQuota = await h.checkQuota(other.licenseKey);
  t.equal(otherQuota.status, 200);
  t.equal(otherQuota.body.data.usedQuota, 0);
  t.equal(otherQuota.body.data.remainingQuota, 3);

  const admin = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
  t.equal(admin.status, 200);
  t.equal(admin.body.data.usedQuota, 4);
  t.equal(admin.body.data.remainingQuota, 6);
  t.equal(admin.body.data.totalQuota, 10);

  // the redemptions made after the flush reach Postgres too
  await h.drainWorker();
  t.equal(await pgUsed(h, lic.firmaId), 4, 'Postgres used_quota counts every redemption, before and after the flush');
  const [counts] = await h.sql`
    select count(*) filter (where status = 'used')::int as used, count(*)::int as total
    from sign_tokens where firma_id = ${lic.firmaId}`;
  t.same({ ...counts }, { used: 4, total: 6 }, 'six tokens issued, four used: the two refused stay issued');

  const history = await h.history(lic.licenseKey, accessToken);
  t.equal(history.status, 200);
  t.equal(history.body.data.items.length, 4);
});

t.test('a second flush keeps counting from Postgres', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3 });
  const redeemFresh = async () => {
    const { tokens } = await mintTokens(h, lic, 1, 1);
    return h.validate(tokens[0]);
  };
  t.equal((await redeemFresh()).body.usedQuota, 1);
  await h.drainWorker();
  await h.flushRedis();
  t.equal((await redeemFresh()).body.usedQuota, 2);
  await h.drainWorker();
  await h.flushRedis();
  const { tokens } = await mintTokens(h, lic, 2, 1);
  const third = await h.validate(tokens[0]);
  t.same(third.body, { success: true, message: third.body.message, usedQuota: 3, remainingQuota: 0 });
  const fourth = await h.validate(tokens[1]);
  t.equal(fourth.status, 400, 'quota still enforced after two flushes');
  t.same(fourth.body, { success: false, message: MSG.QUOTA, remainingQuota: 0 });
  await h.drainWorker();
  t.equal(await pgUsed(h, lic.firmaId), 3);
});

t.test('a license hash lost while its redemptions wait in the stream counts them', async (t) => {
  // the usage worker runs beside the servers (`npm run worker`), so that it can stop while they serve
  const queued = await startHarness(t, 'hydrate-queued', { ...LIVE_COUNTS, RUN_WORKER: '0' });
  const worker = await spawnWorker(t, queued.workerEnv());
  const lic = await queued.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(queued, lic, 6, 0);
  t.equal((await queued.validate(tokens[0])).body.usedQuota, 1);
  await queued.drainWorker();
  // the worker stops; three redemptions wait in the stream, Postgres says 1
  t.equal((await worker.stop('SIGTERM')).code, 0, 'the worker stopped');
  for (const token of tokens.slice(1, 4)) t.equal((await queued.validate(token)).status, 200);
  t.equal(await pgUsed(queued, lic.firmaId), 1);
  const hash = queued.keys.forLicense(lic.firmaId).license;
  t.equal(await queued.redis.del(hash), 1);

  const next = await queued.validate(tokens[4]);
  t.equal(next.status, 200);
  t.equal(next.body.usedQuota, 5, 'Postgres (1) plus the three queued plus this one');
  t.equal(next.body.remainingQuota, 5);
  const quota = await queued.checkQuota(lic.licenseKey);
  t.equal(quota.body.data.usedQuota, 5);
});

t.test('a license hash lost while its redemptions wait as the lines of one entry counts each', async (t) => {
  const queued = await startHarness(t, 'hydrate-lines', { ...LIVE_COUNTS, RUN_WORKER: '0' });
  const lic = await queued.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(queued, lic, 4, 0);
  for (const token of tokens.slice(0, 3)) t.equal((await queued.validate(token)).status, 200);
  // no worker runs: the three redemptions wait, then as one entry of three lines (a call's entry)
  const stream = queued.keys.forLicense(lic.firmaId).stream;
  const spent = (await queued.redis.xrange(stream, '-', '+')).filter(([, fields]) => fields[0] === EventKind.spent);
  t.equal(spent.length, 3, 'three redemptions wait, an entry each');
  await queued.redis.xdel(stream, ...spent.map(([id]) => id));
  await queued.redis.xadd(stream, '*', EventKind.spent, spent.map(([, fields]) => fields[1]).join('\n'));
  t.equal(await queued.redis.del(queued.keys.forLicense(lic.firmaId).license), 1);

  const next = await queued.validate(tokens[3]);
  t.equal(next.status, 200);
  t.equal(next.body.usedQuota, 4, 'Postgres (0) plus the three lines plus this one');
  t.equal(await pgUsed(queued, lic.firmaId), 0, 'none of them is in Postgres yet');
});

t.test('losing only the license hash', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(h, lic, 6, 0);
  const hash = h.keys.forLicense(lic.firmaId).license;
  t.equal(await h.redis.exists(hash), 1, 'the license hash is where keys.ts puts it');
  t.equal((await h.validate(tokens[0])).body.usedQuota, 1);
  t.equal((await h.validate(tokens[1])).body.usedQuota, 2);
  await h.drainWorker();

  // check-quota first
  t.equal(await h.redis.del(hash), 1);
  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.status, 200);
  t.equal(quota.body.data.usedQuota, 2);
  t.equal(quota.body.data.remainingQuota, 8);
  t.equal(await h.redis.hget(hash, LicenseField.usedQuota), '2', 'the hash is rebuilt with the used count from Postgres');

  // validate first
  t.equal(await h.redis.del(hash), 1);
  const r3 = await h.validate(tokens[2]);
  t.equal(r3.status, 200);
  t.equal(r3.body.usedQuota, 3);
  t.equal(r3.body.remainingQuota, 7);
  const replay = await h.validate(tokens[0]);
  t.same(replay.body, USED, 'an old token is still refused (its marker was not lost)');
  await h.drainWorker();

  // get-token first
  t.equal(await h.redis.del(hash), 1);
  const got = await h.getToken(lic.licenseKey, lic.password, 0);
  t.equal(got.status, 200);
  t.equal(got.body.remainingQuota, 7);
  t.equal((await h.validate(got.body.signToken)).body.usedQuota, 4);
  await h.drainWorker();

  // sign-token first
  t.equal(await h.redis.del(hash), 1);
  const signed = await h.signToken(got.body.accessToken, 1);
  t.equal(signed.status, 200);
  t.equal(signed.body.remainingQuota, 6);

  // admin view first
  t.equal(await h.redis.del(hash), 1);
  const admin = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
  t.equal(admin.body.data.usedQuota, 4);
  t.equal(admin.body.data.remainingQuota, 6);

  t.equal((await h.validate(signed.body.signToken)).body.usedQuota, 5);
  await h.drainWorker();
  t.equal(await pgUsed(h, lic.firmaId), 5);
});

t.test('a rebuild that waits for a usage batch on the license row reads that batch whole', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const store = new LicenseStore(h.sql);
  const ms = Date.now().toString(16).padStart(12, '0');
  const tokenId = `${ms.slice(0, 8)}-${ms.slice(8)}-7000-8000-${randomBytes(6).toString('hex')}`;
  // a usage batch as the worker writes one: the redemption and the license's count in one
  // transaction, holding the license row while the rebuild asks about that queued redemption
  const batch = await h.sql.reserve();
  await batch`begin`;
  await batch`insert into token_redemptions (token_id, firma_id, imza_tipi, used_at) values (${tokenId}, ${lic.firmaId}, 0, now())`;
  await batch`update licenses set used_quota = used_quota + 1 where firma_id = ${lic.firmaId}`;
  const read = store.forHydration(lic.firmaId, [tokenId]);
  await waitForLockWait(batch, 'for share');
  await batch`commit`;
  batch.release();
  const found = await read;
  t.equal(found?.row.usedQuota, 1, 'the row counts the batch');
  t.same([...(found?.counted ?? [])], [tokenId], 'and its redemption is among those counted: the copy counts it once');
});
