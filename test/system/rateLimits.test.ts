import t from 'tap';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';

// The rate limits as a whole (docs/api.md#limits): '0' switches a limit off. Each
// route's own limit, its 429 and what a refused request spends: that route's security suite
// (test/routes/<route>.security.test.ts).

t.test('a limit of 0 switches the limit off', async (t) => {
  const h = await startHarness(t, 'ratelimitoff', NO_RATE_LIMITS);
  const lic = await h.createLicense({ totalQuota: 200 });

  const quotaStatuses = [];
  for (let i = 0; i < 20; i++) quotaStatuses.push((await h.checkQuota(lic.licenseKey)).status);
  t.same(quotaStatuses, Array(20).fill(200), '20 check-quota calls (default limit 10)');

  const getStatuses = [];
  let access = '';
  for (let i = 0; i < 12; i++) {
    const res = await h.getToken(lic.licenseKey, lic.password, 0);
    getStatuses.push(res.status);
    access = res.body?.accessToken ?? access;
  }
  t.same(getStatuses, Array(12).fill(200), '12 get-token calls (default limit 10)');

  const historyStatuses = [];
  for (let i = 0; i < 65; i++) historyStatuses.push((await h.history(lic.licenseKey, access, '?limit=1')).status);
  t.same(historyStatuses, Array(65).fill(200), '65 history calls (default limit 60)');

  const signTokens: string[] = [];
  const signStatuses = [];
  for (let i = 0; i < 105; i++) {
    const res = await h.signToken(access, i % 2);
    signStatuses.push(res.status);
    if (res.status === 200) signTokens.push(res.body.signToken);
  }
  t.same(signStatuses, Array(105).fill(200), '105 sign-token calls (default limit 100)');

  const validateStatuses = [];
  for (const token of signTokens) validateStatuses.push((await h.validate(token)).status);
  t.same(validateStatuses, Array(105).fill(200), '105 validate calls (default limit 100)');
  t.equal((await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`)).body.data.usedQuota, 105);
});
