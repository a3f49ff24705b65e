import t from 'tap';
import { adminOk } from '../helpers/admin.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { expectCurrentTimestamp, ISO_UTC, windowed } from '../helpers/shapes.js';
import { TokenSource } from '../helpers/tokens.js';
import { sleep } from '../helpers/wait.js';

// GET /api/License/check-quota/{licenseKey} (CONTRACT.md), the 200 answers: every field, the
// remaining share, both path casings, and the cache (QUOTA_CACHE_SECONDS): a redemption may
// stay hidden for its time, an admin change shows at once, on every instance.

const DAY_MS = 86_400_000;

t.test('answers (default 30 s cache)', async (t) => {
  const h = await startHarness(t, 'cq-shape', NO_RATE_LIMITS);

  t.test('200 body: success, data with every field, message, current timestamp', async (t) => {
    const expiryDate = new Date(Date.now() + 90 * DAY_MS).toISOString();
    const lic = await h.createLicense({ totalQuota: 4, expiryDate, organizationName: 'Özgür Eczane Ltd. Şti.' });
    const token = await new TokenSource(h, lic).next();
    t.equal((await h.validate(token)).status, 200, 'one redemption before the first look');
    const res = await windowed(() => h.checkQuota(lic.licenseKey));
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type') ?? '', /^application\/json/);
    t.strictSame(res.body, {
      success: true,
      data: {
        licenseKey: lic.licenseKey,
        remainingQuota: 3,
        totalQuota: 4,
        usedQuota: 1,
        quotaPercentage: 75,
        expiryDate,
        isActive: true,
        organizationName: 'Özgür Eczane Ltd. Şti.',
      },
      message: res.body?.message,
      timestamp: res.body?.timestamp,
    });
    t.type(res.body?.message, 'string', 'message is a string');
    t.match(res.body?.data?.expiryDate, ISO_UTC, 'expiryDate ISO 8601 UTC');
    expectCurrentTimestamp(t, res, 'first');
    await sleep(15);
    const again = await windowed(() => h.checkQuota(lic.licenseKey));
    t.equal(again.status, 200, 'cached answer');
    expectCurrentTimestamp(t, again, 'cached answer');
  });

  t.test('quotaPercentage is the remaining share, 0-100', async (t) => {
    const full = await h.createLicense({ totalQuota: 10 });
    const res = await h.checkQuota(full.licenseKey);
    t.equal(res.body?.data?.quotaPercentage, 100, 'untouched license: 100');
    t.equal(res.body?.data?.remainingQuota, 10);
    t.equal(res.body?.data?.usedQuota, 0);
  });

  t.test('both path casings name the same resource', async (t) => {
    const lic = await h.createLicense({ totalQuota: 7 });
    for (const path of ['/api/License/check-quota/', '/api/license/check-quota/', '/API/LICENSE/CHECK-QUOTA/', '/Api/License/Check-Quota/']) {
      const res = await h.request('GET', path + lic.licenseKey);
      t.equal(res.status, 200, `${path}: 200`);
      t.equal(res.body?.data?.licenseKey, lic.licenseKey, `${path}: the license`);
      t.equal(res.body?.data?.remainingQuota, 7, `${path}: its quota`);
    }
  });
});

t.test('default cache: a redemption may stay hidden for 30 s, an admin change shows at once', async (t) => {
  const h = await startHarness(t, 'cq-cache', NO_RATE_LIMITS);
  const lic = await h.createLicense({ totalQuota: 5 });
  const source = new TokenSource(h, lic);
  const first = await h.checkQuota(lic.licenseKey);
  t.equal(first.body?.data?.remainingQuota, 5, 'first look: 5 left');

  t.equal((await h.validate(await source.next())).status, 200, 'one redemption');
  const cached = await h.checkQuota(lic.licenseKey);
  t.equal(cached.status, 200);
  t.equal(cached.body?.data?.remainingQuota, 5, 'the redemption is not visible yet (cached answer)');
  t.equal(cached.body?.data?.usedQuota, 0, 'cached usedQuota');

  await adminOk(h, 'POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 3 });
  const afterAdd = await h.checkQuota(lic.licenseKey);
  t.equal(afterAdd.status, 200);
  t.strictSame(
    [afterAdd.body?.data?.totalQuota, afterAdd.body?.data?.usedQuota, afterAdd.body?.data?.remainingQuota],
    [8, 1, 7],
    'added quota visible on the very next check (and the redemption with it)',
  );

  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false });
  const inactive = await h.checkQuota(lic.licenseKey);
  t.equal(inactive.status, 403, 'deactivation visible on the very next check');
  t.equal(inactive.body?.error?.code, 'LICENSE_INACTIVE');

  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: true });
  const active = await h.checkQuota(lic.licenseKey);
  t.equal(active.status, 200, 'reactivation visible on the very next check');
  t.equal(active.body?.data?.isActive, true);

  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { organizationName: 'Yeni Ad A.Ş.' });
  t.equal((await h.checkQuota(lic.licenseKey)).body?.data?.organizationName, 'Yeni Ad A.Ş.', 'rename visible at once');
});

t.test('QUOTA_CACHE_SECONDS=0: redemptions are visible immediately', async (t) => {
  const h = await startHarness(t, 'cq-nocache', { ...NO_RATE_LIMITS, QUOTA_CACHE_SECONDS: '0' });
  const lic = await h.createLicense({ totalQuota: 4 });
  const source = new TokenSource(h, lic);
  t.equal((await h.checkQuota(lic.licenseKey)).body?.data?.remainingQuota, 4, 'before: 4');
  for (let i = 1; i <= 3; i++) {
    t.equal((await h.validate(await source.next())).status, 200, `redemption ${i}`);
    const res = await h.checkQuota(lic.licenseKey);
    t.equal(res.body?.data?.usedQuota, i, `after ${i}: usedQuota`);
    t.equal(res.body?.data?.remainingQuota, 4 - i, `after ${i}: remainingQuota`);
  }
});

t.test('two instances sharing Redis and Postgres: an admin change on A shows on B\'s very next answer', async (t) => {
  const a = await startHarness(t, 'cq-pair', NO_RATE_LIMITS);
  const b = await startHarness(t, 'cq-pair-b', {
    ...NO_RATE_LIMITS,
    REDIS_PREFIX: a.config.redisPrefix,
    PG_SCHEMA: a.config.pgSchema,
    JWT_SECRET: a.config.jwtKeys[0]!.secret,
    RUN_WORKER: '0',
  });
  const lic = await a.createLicense({ totalQuota: 5 });
  t.equal((await b.checkQuota(lic.licenseKey)).body?.data?.remainingQuota, 5, 'B sees the license made through A');

  // B caches: a redemption through A is hidden on B
  t.equal((await a.validate(await new TokenSource(a, lic).next())).status, 200, 'redemption through A');
  t.equal((await b.checkQuota(lic.licenseKey)).body?.data?.remainingQuota, 5, 'B answers from its cache');

  // no waiting for a message: the next answer after the admin's 200, every time
  for (let i = 1; i <= 10; i++) {
    await adminOk(a, 'POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 3 });
    const seen = await b.checkQuota(lic.licenseKey);
    t.strictSame(
      [seen.body?.data?.totalQuota, seen.body?.data?.usedQuota, seen.body?.data?.remainingQuota],
      [5 + 3 * i, 1, 4 + 3 * i],
      `purchase ${i} through A: B's next answer has it`,
    );
  }

  t.equal((await a.checkQuota(lic.licenseKey)).status, 200, 'A caches an active answer');
  await adminOk(b, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false });
  t.equal((await b.checkQuota(lic.licenseKey)).status, 403, 'B itself: deactivation visible at once');
  const inactive = await a.checkQuota(lic.licenseKey);
  t.equal(inactive.status, 403, 'deactivation through B: A\'s next answer has it');
  t.equal(inactive.body?.error?.code, 'LICENSE_INACTIVE');

  await a.drainWorker();
});
