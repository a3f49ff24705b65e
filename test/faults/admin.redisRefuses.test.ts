import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { ADMIN_TOKEN, LIVE_COUNTS, startHarness, type Harness, type Teardown, type TestLicense } from '../helpers/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/processes.js';
import { mintTokens } from '../helpers/tokens.js';
import { pollUntil, waitForLockWait } from '../helpers/wait.js';
import { MSG } from '../helpers/shapes.js';
import { LicenseField } from '../../src/redis/fields.js';

// Admin changes never leave Postgres and Redis split: a change is in force on the
// next request, or the admin gets an error and nothing changed. Redis here is the test's
// own, made to refuse writes (min-replicas-to-write with no replica: NOREPLICAS) at the
// worst moment: after the change has fenced the copy and while Postgres is committing it.

const INVALID = { success: false, message: MSG.INVALID };

async function stack(t: Teardown): Promise<{ h: Harness; redis: PrivateRedis }> {
  const redis = await startPrivateRedis(t);
  const h = await startHarness(t, 'admin-split', { ...LIVE_COUNTS, REDIS_URL: redis.url });
  return { h, redis };
}

/**
 * Runs an admin request whose Postgres UPDATE waits on a row lock the test holds; while it
 * waits (the Redis copies already fenced), Redis starts refusing writes; then the lock goes.
 */
async function changeWhileRedisFails(h: Harness, redis: PrivateRedis, licenseKey: string, run: () => Promise<{ status: number; body: any }>) { // eslint-disable-line @typescript-eslint/no-explicit-any
  let answer: Promise<{ status: number; body: any }> | null = null; // eslint-disable-line @typescript-eslint/no-explicit-any
  await h.sql.begin(async (tx) => {
    await tx`select 1 from licenses where license_key = ${licenseKey} for update`;
    answer = run();
    // the change has fenced Redis and is waiting for the row (its first statement locks it:
    // the audit record's snapshot, then the update)
    await waitForLockWait(h.sql, 'licenses', 5000);
    await redis.cli('config', 'set', 'min-replicas-to-write', '1');
  });
  const out = await (answer as unknown as Promise<{ status: number; body: any }>); // eslint-disable-line @typescript-eslint/no-explicit-any
  return out;
}

t.test('a deactivation whose Redis write fails: no instance serves the old copy, and it takes hold by itself', async (t) => {
  const { h, redis } = await stack(t);
  const lic = await h.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(h, lic, 3);
  t.equal((await h.validate(tokens[0])).status, 200);

  const patched = await changeWhileRedisFails(h, redis, lic.licenseKey,
    () => h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false }));
  t.equal(patched.status, 503, 'the admin is told the change did not fully complete');
  const [row] = await h.sql`select is_active from licenses where license_key = ${lic.licenseKey}`;
  t.equal(row?.is_active, false, 'Postgres has the change');
  t.equal(await redis.cli('hget', h.keys.forLicense(lic.firmaId).license, LicenseField.isActive), '1', 'the Redis copy is the old one...');
  t.not(await redis.cli('hget', h.keys.forLicense(lic.firmaId).license, LicenseField.fences), '', '...but fenced');

  // Redis writes again: the old copy must never serve
  await redis.cli('config', 'set', 'min-replicas-to-write', '0');
  const last = await pollUntil(async () => {
    const res = await h.validate(tokens[1]);
    t.not(res.status, 200, 'the deactivated license never redeems');
    return res;
  }, (res) => res.status !== 503, { timeoutMs: 6000, intervalMs: 100 });
  t.equal(last.status, 401, 'the deactivation takes hold without anyone retrying the change');
  t.same(last.body, INVALID);
  const got = await h.getToken(lic.licenseKey, lic.password);
  t.equal(got.status, 401);
  t.equal(got.body.error.code, 'LICENSE_INACTIVE');
  t.equal(await redis.cli('hget', h.keys.forLicense(lic.firmaId).license, LicenseField.isActive), '0', 'the copy is rebuilt from Postgres');
});

t.test('a password change whose Redis write fails: the old password stops working', async (t) => {
  const { h, redis } = await stack(t);
  const lic = await h.createLicense({ totalQuota: 10 });
  t.equal((await h.getToken(lic.licenseKey, lic.password)).status, 200);
  const patched = await changeWhileRedisFails(h, redis, lic.licenseKey,
    () => h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { password: 'a brand new password' }));
  t.equal(patched.status, 503);
  await redis.cli('config', 'set', 'min-replicas-to-write', '0');
  const old = await h.getToken(lic.licenseKey, lic.password);
  t.equal(old.status, 401, 'the old password is refused at once');
  t.equal(old.body.error.code, 'INVALID_CREDENTIALS');
  // the license's copy stays fenced until the failed change's deadline: 503 meanwhile
  const fresh = await pollUntil(async () => {
    const res = await h.getToken(lic.licenseKey, 'a brand new password');
    if (res.status === 503) t.equal((await h.getToken(lic.licenseKey, lic.password)).status, 401, 'the old password never works again');
    return res;
  }, (res) => res.status !== 503, { timeoutMs: 5000, intervalMs: 200 });
  t.equal(fresh.status, 200, 'the new one works', { body: fresh.body });
});

/**
 * A license no process of the instance has heard of: made elsewhere, its announcement missed
 * (a process starting, a subscription lost). Here a copy of another's row and packages under
 * a new key, written straight to Postgres, dated before any process's periodic look at new
 * keys, with no Redis copy: only a look-up in Postgres finds it.
 */
async function unannouncedCopy(h: Harness, of: TestLicense): Promise<TestLicense> {
  const licenseKey = randomUUID();
  const firmaId = randomBytes(9).toString('base64url');
  await h.sql.begin(async (tx) => {
    for (const [table, where] of [['licenses', 'license_key'], ['license_package_rows', 'firma_id']] as const) {
      // every column a row is written with (generated ones are computed again)
      const [cols] = await tx`select string_agg(quote_ident(column_name::text), ', ') as list from information_schema.columns
        where table_schema = current_schema() and table_name = ${table} and is_generated = 'NEVER'`;
      const list = cols?.list as string;
      await tx.unsafe(`create temp table copied on commit drop as select ${list} from ${table} where ${where} = $1`,
        [where === 'license_key' ? of.licenseKey : of.firmaId]);
      await tx.unsafe(`update copied set firma_id = $1${table === 'licenses' ? ", license_key = $2, created_at = '2020-01-01T00:00:00Z'" : ''}`,
        table === 'licenses' ? [firmaId, licenseKey] : [firmaId]);
      await tx.unsafe(`insert into ${table} (${list}) select ${list} from copied`);
      await tx.unsafe('drop table copied');
    }
  });
  return { ...of, licenseKey, firmaId };
}

t.test('a password change whose Redis write fails, at a key no process has heard of: the new password is never refused as wrong', async (t) => {
  const { h, redis } = await stack(t);
  const lic = await unannouncedCopy(h, await h.createLicense({ totalQuota: 10 }));
  const patched = await changeWhileRedisFails(h, redis, lic.licenseKey,
    () => h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { password: 'a brand new password' }));
  t.equal(patched.status, 503);
  await redis.cli('config', 'set', 'min-replicas-to-write', '0');
  // Redis holds only the change's fences for this key: they say it exists, so it is looked up
  const fresh = await pollUntil(() => h.getToken(lic.licenseKey, 'a brand new password'),
    (res) => res.status !== 503, { timeoutMs: 5000, intervalMs: 200 });
  t.equal(fresh.status, 200, 'the new password works', { body: fresh.body });
  const old = await h.getToken(lic.licenseKey, lic.password);
  t.equal(old.status, 401, 'the old one does not');
  t.equal(old.body.error.code, 'INVALID_CREDENTIALS');
});

t.test('Redis down before the change: 503 and nothing changed', async (t) => {
  const { h, redis } = await stack(t);
  const lic = await h.createLicense({ totalQuota: 10 });
  await redis.cli('config', 'set', 'min-replicas-to-write', '1');
  const patched = await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false });
  t.equal(patched.status, 503);
  t.equal(patched.body.error.code, 'SERVICE_UNAVAILABLE');
  const added = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 5 });
  t.equal(added.status, 503);
  const [row] = await h.sql`select is_active, total_quota::int as total, version::int as version from licenses where license_key = ${lic.licenseKey}`;
  t.same({ ...row }, { is_active: true, total: 10, version: 1 }, 'Postgres untouched');
  await redis.cli('config', 'set', 'min-replicas-to-write', '0');
  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.body.data.totalQuota, 10);
  t.equal(quota.body.data.isActive, true);
});

t.test('a purchase retried with its Idempotency-Key after a 503 credits once', async (t) => {
  const { h, redis } = await stack(t);
  const lic = await h.createLicense({ totalQuota: 10 });
  const key = 'order-2026-11-22-0001';
  const buy = () => h.request('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 5 },
    { authorization: `Bearer ${ADMIN_TOKEN}`, 'idempotency-key': key });
  const first = await changeWhileRedisFails(h, redis, lic.licenseKey, buy);
  t.equal(first.status, 503, 'the answer is lost to the admin');
  await redis.cli('config', 'set', 'min-replicas-to-write', '0');
  const retried = await buy();
  t.equal(retried.status, 200);
  t.equal(retried.body.data.totalQuota, 15, 'credited once');
  const again = await buy();
  t.equal(again.body.data.totalQuota, 15, 'and once only');
  const [row] = await h.sql`select total_quota::int as total from licenses where license_key = ${lic.licenseKey}`;
  t.equal(row?.total, 15);
  // the fence of the first attempt outlives it by its deadline: until then check-quota may
  // answer 503, never the old total
  const quota = await pollUntil(() => h.checkQuota(lic.licenseKey), (res) => res.status !== 503, { timeoutMs: 5000, intervalMs: 100 });
  t.equal(quota.status, 200);
  t.equal(quota.body.data.totalQuota, 15);

  const other = await h.request('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 7 },
    { authorization: `Bearer ${ADMIN_TOKEN}`, 'idempotency-key': key });
  t.equal(other.status, 422, 'the key of another purchase');
  t.equal(other.body.error.code, 'IDEMPOTENCY_KEY_REUSED');
  const plain = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 1 });
  t.equal(plain.body.data.totalQuota, 16, 'without the header every call credits');
  for (const key of ['x'.repeat(256), 'tab\tinside']) { // fetch itself refuses other control bytes
    const bad = await h.request('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 1 },
      { authorization: `Bearer ${ADMIN_TOKEN}`, 'idempotency-key': key });
    t.equal(bad.status, 400, `Idempotency-Key ${JSON.stringify(key.slice(0, 12))}: 400`);
    t.equal(bad.body?.error?.code, 'INVALID_REQUEST');
  }
  t.equal((await h.checkQuota(lic.licenseKey)).body.data.totalQuota, 16, 'the refused purchases credited nothing');
});
