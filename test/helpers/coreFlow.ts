import type { Test } from 'tap';
import type { Harness, TestLicense } from './harness.js';
import { claimsOf } from './jwt.js';
import { MSG } from './shapes.js';
import { mintTokens } from './tokens.js';

// The core flow, one function the single-Redis test (test/system/flow.test.ts) and the Redis
// Cluster test (test/system/cluster.test.ts) both run, so the same assertions hold on both
// layouts: every unit of quota redeems once, then quota is exhausted; a spent token stays
// spent; check-quota shows the counts; a parallel burst spends exactly what is left; and
// after the usage worker drains, Postgres holds exactly the redemptions the clients saw
// (expectBooks, which the resharding test uses too).

export interface FlowLicense extends TestLicense {
  /** its total quota */
  total: number;
}

const ORIGIN = 'https://flow.example';

/**
 * The books after the worker drained: per license, Postgres's used quota is the number of
 * redemptions answered 200, and its used tokens are exactly those (none twice).
 */
export async function expectBooks(t: Test, h: Harness, redeemed: Map<string, string[]>): Promise<void> {
  for (const [firmaId, ids] of redeemed) {
    t.equal(new Set(ids).size, ids.length, `${firmaId}: no token answered 200 twice`);
    const [row] = await h.sql`select used_quota::int as used from licenses where firma_id = ${firmaId}`;
    t.equal(row?.used, ids.length, `${firmaId}: Postgres used_quota is the number of 200 validates (${ids.length})`);
    const used = await h.sql`select token_id from sign_tokens where firma_id = ${firmaId} and status = 'used' order by token_id`;
    t.same(used.map((r) => r.token_id as string), [...ids].sort(), `${firmaId}: the used tokens are exactly those answered 200`);
  }
}

/** The core flow on licenses the caller made (at least one); ends with the worker drained and the books checked. */
export async function coreFlow(t: Test, h: Harness, licenses: FlowLicense[]): Promise<void> {
  const redeemed = new Map<string, string[]>();
  for (const [i, lic] of licenses.entries()) {
    const { tokens } = await mintTokens(h, lic, lic.total + 1, i % 2);
    const answers = [];
    for (const token of tokens) answers.push(await h.validate(token, ORIGIN));
    t.same(answers.map((a) => a.status), [...Array.from({ length: lic.total }, () => 200), 400],
      'every unit redeems once, then quota is exhausted');
    t.same(answers.map((a) => a.body.usedQuota).slice(0, lic.total), Array.from({ length: lic.total }, (_, u) => u + 1));
    t.same(answers[lic.total]?.body, { success: false, message: MSG.QUOTA, remainingQuota: 0 });
    t.same((await h.validate(tokens[0])).body, { success: false, message: MSG.USED }, 'a spent token stays spent');
    redeemed.set(lic.firmaId, tokens.slice(0, lic.total).map((tok) => claimsOf(tok).token_id));
    const quota = await h.checkQuota(lic.licenseKey);
    t.equal(quota.status, 429);
    t.same(quota.body.data, { remainingQuota: 0, totalQuota: lic.total, usedQuota: lic.total });
  }

  // a license with quota left: a 200 check-quota, then a burst of one license, whose requests
  // of one turn go to its slot as one redeem.lua call
  const extra = await h.createLicense({ totalQuota: 5 });
  const got = await h.getToken(extra.licenseKey, extra.password, 1);
  t.equal((await h.validate(got.body.signToken, ORIGIN)).body.usedQuota, 1);
  const quota = await h.checkQuota(extra.licenseKey);
  t.equal(quota.status, 200);
  t.same([quota.body.data.usedQuota, quota.body.data.remainingQuota], [1, 4]);
  const burst = (await mintTokens(h, extra, 12)).tokens;
  const burstAnswers = await Promise.all(burst.map((token) => h.validate(token, ORIGIN)));
  const ok = burst.filter((_, i) => burstAnswers[i]?.status === 200);
  t.same(burstAnswers.filter((a) => a.status === 200).map((a) => a.body.usedQuota as number).sort((a, b) => a - b), [2, 3, 4, 5],
    'a parallel burst spends exactly the 4 units left');
  t.equal(burstAnswers.filter((a) => a.status === 400 && a.body.message === MSG.QUOTA).length, 8, 'the other 8 are refused');
  redeemed.set(extra.firmaId, [got.body.signToken as string, ...ok].map((tok) => claimsOf(tok).token_id));

  await h.drainWorker(20_000);
  await expectBooks(t, h, redeemed);
  for (const lic of licenses) {
    const rows = await h.sql`select status, origin from sign_tokens where firma_id = ${lic.firmaId}`;
    t.equal(rows.length, lic.total + 1, 'every issued token persisted');
    t.ok(rows.filter((r) => r.status === 'used').every((r) => r.origin === ORIGIN), 'with the origin of its redemption');
  }
  const history = await h.history(extra.licenseKey, got.body.accessToken);
  t.equal(history.status, 200);
  t.equal(history.body.data.items.length, 5, 'the history lists every redemption');
}
