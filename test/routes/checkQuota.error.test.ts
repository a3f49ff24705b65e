import { randomUUID } from 'node:crypto';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { expectCheckQuotaError, expectCurrentTimestamp, windowed } from '../helpers/shapes.js';
import { TokenSource } from '../helpers/tokens.js';

// GET /api/License/check-quota/{licenseKey}, every row of its error table: status, code, the
// body {success:false, error:{code, message}, timestamp[, data]} and a timestamp of its own.

const DAY_MS = 86_400_000;

t.test('errors', async (t) => {
  const h = await startHarness(t, 'cq-errors', NO_RATE_LIMITS);

  t.test('400 INVALID_LICENSE_KEY for keys not in UUID format', async (t) => {
    for (const key of ['not-a-uuid', '12345', 'ABC-123-XYZ', `${randomUUID()}0`, randomUUID().replace(/-/g, ''), 'g'.repeat(8) + randomUUID().slice(8)]) {
      const res = await windowed(() => h.checkQuota(encodeURIComponent(key)));
      expectCheckQuotaError(t, res, 400, 'INVALID_LICENSE_KEY', key);
      expectCurrentTimestamp(t, res, key);
    }
  });

  t.test('404 LICENSE_NOT_FOUND for an unknown UUID', async (t) => {
    const res = await windowed(() => h.checkQuota(randomUUID()));
    expectCheckQuotaError(t, res, 404, 'LICENSE_NOT_FOUND', 'unknown key');
    expectCurrentTimestamp(t, res, 'unknown key');
  });

  t.test('410 LICENSE_EXPIRED with data {expiryDate, daysExpired}', async (t) => {
    const expiryDate = new Date(Date.now() - 3.5 * DAY_MS).toISOString();
    const lic = await h.createLicense({ totalQuota: 5, expiryDate });
    const res = await windowed(() => h.checkQuota(lic.licenseKey));
    expectCheckQuotaError(t, res, 410, 'LICENSE_EXPIRED', 'expired 3.5 days ago', { expiryDate, daysExpired: 3 });
    expectCurrentTimestamp(t, res, 'expired');
    const recent = await h.createLicense({ totalQuota: 5, expiryDate: new Date(Date.now() - 3_600_000).toISOString() });
    const res2 = await h.checkQuota(recent.licenseKey);
    t.equal(res2.status, 410, 'expired an hour ago: 410');
    t.equal(res2.body?.data?.daysExpired, 0, 'expired an hour ago: 0 whole days');
  });

  t.test('403 LICENSE_INACTIVE', async (t) => {
    const lic = await h.createLicense({ totalQuota: 5, isActive: false });
    const res = await windowed(() => h.checkQuota(lic.licenseKey));
    expectCheckQuotaError(t, res, 403, 'LICENSE_INACTIVE', 'inactive');
    expectCurrentTimestamp(t, res, 'inactive');
  });

  t.test('429 QUOTA_EXCEEDED with data {remainingQuota 0, totalQuota, usedQuota}', async (t) => {
    const lic = await h.createLicense({ totalQuota: 2 });
    for (const token of await new TokenSource(h, lic).many(2)) t.equal((await h.validate(token)).status, 200);
    const res = await windowed(() => h.checkQuota(lic.licenseKey));
    expectCheckQuotaError(t, res, 429, 'QUOTA_EXCEEDED', 'used up', { remainingQuota: 0, totalQuota: 2, usedQuota: 2 });
    expectCurrentTimestamp(t, res, 'used up');
    const empty = await h.createLicense({ totalQuota: 0 });
    expectCheckQuotaError(t, await h.checkQuota(empty.licenseKey), 429, 'QUOTA_EXCEEDED', 'bought none', {
      remainingQuota: 0, totalQuota: 0, usedQuota: 0,
    });
  });
});

