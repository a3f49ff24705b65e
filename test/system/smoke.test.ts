import t from 'tap';
import { startHarness } from '../helpers/harness.js';

t.test('the whole flow: create, get-token, validate, check-quota, history', async (t) => {
  const h = await startHarness(t, 'smoke');
  const lic = await h.createLicense({ totalQuota: 2 });
  const got = await h.getToken(lic.licenseKey, lic.password, 1);
  t.equal(got.status, 200);
  const ok = await h.validate(got.body.signToken);
  t.same(ok.body, { success: true, message: ok.body.message, usedQuota: 1, remainingQuota: 1 });
  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.body.data.remainingQuota, 1);
  await h.drainWorker();
  const history = await h.history(lic.licenseKey, got.body.accessToken);
  t.equal(history.body.data.items.length, 1);
  t.equal(history.body.data.items[0].imzaTipi, 1);
});
