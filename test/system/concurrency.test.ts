import t from 'tap';
import { LIVE_COUNTS, startHarness } from '../helpers/harness.js';
import { MSG } from '../helpers/shapes.js';
import { mintTokens } from '../helpers/tokens.js';

// Races against one token and against the last units of quota: the Lua scripts must make
// each redemption atomic, so no unit is spent twice and quota never goes below zero.

// one service for the file, each race on a license of its own; every request on a
// connection of its own, so the racers reach every server process
const h = await startHarness(t, 'conc', LIVE_COUNTS);

t.test('200 parallel validates of one token: exactly one succeeds', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const got = await h.getToken(lic.licenseKey, lic.password, 0);
  t.equal(got.status, 200);
  const token: string = got.body.signToken;

  const answers = await Promise.all(Array.from({ length: 200 }, () => h.validate(token)));
  const ok = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status === 400);
  t.equal(ok.length, 1, 'exactly one 200');
  t.equal(refused.length, 199, 'every other answer is 400');
  t.same(ok[0]?.body, { success: true, message: ok[0]?.body.message, usedQuota: 1, remainingQuota: 9 });
  t.type(ok[0]?.body.message, 'string');
  t.ok(
    refused.every((a) => a.text === JSON.stringify({ success: false, message: MSG.USED })),
    'every refusal is exactly {success:false, message:"Bu token zaten kullanılmış. Yeni token alınız."}',
  );

  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.status, 200);
  t.equal(quota.body.data.usedQuota, 1);
  t.equal(quota.body.data.remainingQuota, 9);
  const admin = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
  t.equal(admin.body.data.usedQuota, 1);
  t.equal(admin.body.data.remainingQuota, 9);

  await h.drainWorker();
  const [row] = await h.sql`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
  t.equal(row?.used, 1, 'Postgres used_quota is 1');
  const used = await h.sql`select token_id from sign_tokens where firma_id = ${lic.firmaId} and status = 'used'`;
  t.equal(used.length, 1, 'one used row in the audit trail');
});

t.test('60 distinct tokens against 25 units of quota, all in parallel', async (t) => {
  const Q = 25;
  const N = 60;
  const lic = await h.createLicense({ totalQuota: Q });
  const { tokens } = await mintTokens(h, lic, N, 1);
  t.equal(new Set(tokens).size, N, `${N} distinct sign tokens minted`);

  const answers = await Promise.all(tokens.map((token) => h.validate(token)));
  const ok = answers.filter((a) => a.status === 200);
  const exhausted = answers.filter((a) => a.status === 400);
  t.equal(ok.length, Q, `exactly ${Q} redemptions succeed`);
  t.equal(exhausted.length, N - Q, `exactly ${N - Q} are refused`);
  t.equal(ok.length + exhausted.length, N, 'no other status');
  t.ok(
    exhausted.every((a) => a.text === JSON.stringify({ success: false, message: MSG.QUOTA, remainingQuota: 0 })),
    'every refusal is exactly {success:false, message:"İmza kotası doldu", remainingQuota:0}',
  );
  t.ok(ok.every((a) => a.body.remainingQuota >= 0), 'no success ever shows remainingQuota < 0');
  t.ok(ok.every((a) => a.body.usedQuota + a.body.remainingQuota === Q), 'usedQuota + remainingQuota = totalQuota in every success');
  const usedValues = ok.map((a) => a.body.usedQuota as number).sort((a, b) => a - b);
  t.same(usedValues, Array.from({ length: Q }, (_, i) => i + 1), 'the usedQuota values are exactly 1..25');

  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.status, 429, 'check-quota: quota used up');
  t.same(quota.body.error.code, 'QUOTA_EXCEEDED');
  t.same(quota.body.data, { remainingQuota: 0, totalQuota: Q, usedQuota: Q });
  const admin = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
  t.equal(admin.body.data.usedQuota, Q);
  t.equal(admin.body.data.remainingQuota, 0);

  await h.drainWorker();
  const [row] = await h.sql`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
  t.equal(row?.used, Q, `Postgres used_quota is ${Q}`);
  const rows = await h.sql`select status, count(*)::int as n from sign_tokens where firma_id = ${lic.firmaId} group by status`;
  const byStatus = Object.fromEntries(rows.map((r) => [r.status, r.n]));
  t.same(byStatus, { used: Q, issued: N - Q }, `${Q} 'used' rows, the ${N - Q} refused tokens still 'issued'`);

  // the refused tokens were not burned: once quota is added, each redeems once
  const added = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: N - Q });
  t.equal(added.status, 200);
  const refusedTokens = tokens.filter((_, i) => answers[i]?.status === 400);
  const retried = await Promise.all(refusedTokens.map((token) => h.validate(token)));
  t.ok(retried.every((a) => a.status === 200), 'every refused token redeems after quota is added');
  t.same(
    retried.map((a) => a.body.usedQuota as number).sort((a, b) => a - b),
    Array.from({ length: N - Q }, (_, i) => Q + i + 1),
  );
  await h.drainWorker();
  const [after] = await h.sql`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
  t.equal(after?.used, N);
});
