import type { Test } from 'tap';
import type { Harness, TestLicense } from '../harness.js';
import { checkFailoverBooks, countsOf, failoverTokens, otherAnswers, redeemAll, redeemAnswered, untilRedeemsAgain, type Answered } from './failover.js';

// One failover of the Redis under the service, as every HA test runs it: tokens issued for
// each license (early, window, outstanding), the early ones redeemed and replicated, then
// `fail` cuts the replicas, runs the window's redemptions (validate and sign, with releases
// of early tokens beside them) on the master alone, kills it and has a replica promoted.
// Afterwards: the service redeems again by itself; no token answered 200 before redeems
// again; the outstanding tokens are refused (fail closed); the books agree.

export interface FailoverResult {
  window: Answered[];
  /** tokens answered 200 whose redemption the failover lost (not in Postgres) */
  lost: string[];
  /** ms from the promotion until a new token redeemed */
  backMs: number;
}

export async function failoverScenario(
  t: Test, h: Harness, licenses: TestLicense[],
  fail: (windowLoad: () => Promise<void>) => Promise<void>,
  perLicense = 10,
): Promise<FailoverResult> {
  const tokens = await failoverTokens(h, licenses, perLicense);
  const [early] = await redeemAll(h, tokens.early);
  t.same(countsOf(early), { 200: tokens.early.length }, 'the early tokens redeemed before the failover');
  let window: Answered[] = [];
  let released: Answered[] = [];
  await fail(async () => {
    [window, released] = await redeemAll(h, tokens.window, tokens.early.filter((_, i) => i % 5 === 0));
  });
  const promotedAt = Date.now();
  const backMs = await untilRedeemsAgain(h, licenses[0] as TestLicense);

  const replay = await redeemAnswered(h, [...early, ...window].filter((a) => a.status === 200).map((a) => a.token));
  t.same(replay.filter((a) => a.status === 200).map((a) => a.tokenId), [],
    `no token answered 200 before the failover redeems again (${JSON.stringify(countsOf(replay))})`);
  t.same(replay.filter((a) => a.status !== 400).length, 0, `every replay answers 400 "already used" (others: ${otherAnswers(replay, 400)})`);
  const outstanding = await redeemAnswered(h, tokens.outstanding);
  t.same(outstanding.filter((a) => a.status === 200).length, 0,
    `the tokens issued before the failover and never redeemed are refused: their redemption might have been lost (${JSON.stringify(countsOf(outstanding))})`);
  const lost = await checkFailoverBooks(t, h, licenses, [...early, ...window]);
  t.comment(`window ${JSON.stringify(countsOf(window))}, releases beside it ${JSON.stringify(countsOf(released))}; a new token redeemed ${backMs} ms after the promotion ` +
    `(${Date.now() - promotedAt} ms to here); redemptions answered 200 and lost: ${lost.length}`);
  return { window, lost, backMs };
}
