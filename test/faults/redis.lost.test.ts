import t from 'tap';
import { claimsOf } from '../helpers/jwt.js';
import { sleep } from '../helpers/wait.js';
import { checkLossBooks, licenseStateInUse } from '../helpers/faults/books.js';
import { Load } from '../helpers/faults/load.js';
import { untilServing } from '../helpers/faults/probe.js';
import { CountWatch, killFrozen, usedInPostgres } from '../helpers/faults/redis.js';
import { timedCall } from '../helpers/http.js';
import { logSummary, startStack } from '../helpers/faults/stack.js';
import { validateAll } from '../helpers/faults/tokens.js';
import { TokenSource } from '../helpers/tokens.js';

// Fault 6: Redis restarted empty (SIGKILL, no persistence) under load while usage events
// wait in its streams (the standalone worker was killed a second before, so they pile up).
// What the redemptions answered 200 and not yet in Postgres were is lost, and with it their
// quota deductions: the window is the worker lag (docs/durability.md). The service must
// fail closed: every token issued before the loss and not proven unused, redeemed or not,
// is refused as already used, so none redeems twice; new tokens work; the rebuilt license
// counts never fall below Postgres. The books cannot balance (lost events are lost): the
// 'used' rows = used_quota = Redis 'u' after the drain, and the 200s missing from Postgres
// are exactly the redemptions queued in the streams at the moment of the kill.
//
// The load keeps only token ids; the tokens replayed after the loss are those of one more
// license, validated by the test itself: some long before the loss (in Postgres), some after
// the worker died (queued, lost), some never (outstanding).

const WORKER_DOWN_MS = 1000;
const PER_SET = 10;

t.test('Redis restarted empty with events queued: fail closed, nothing redeemed twice, the loss is the backlog', { timeout: 60_000 }, async (t) => {
  const stack = await startStack(t, { label: 'fault-redis-lost', standaloneWorker: true });
  const [replayLicense, ...licenses] = await stack.createLicenses(5);
  if (!replayLicense) throw new Error('no license');
  const early = await new TokenSource(stack.client(), replayLicense).many(PER_SET);
  const late = await new TokenSource(stack.client(), replayLicense).many(PER_SET);
  const outstanding = await new TokenSource(stack.client(), replayLicense).many(PER_SET);
  for (const lic of licenses) outstanding.push(...await new TokenSource(stack.client(), lic).many(3));
  t.same((await validateAll(stack, early)).counts, { 200: PER_SET }, 'replay license: the early tokens redeemed');

  const load = new Load(stack, licenses, { concurrency: 8 });
  await load.start();
  await load.waitForOk(200);
  await stack.killWorker();
  const workerDownAt = Date.now();
  const okAtWorkerDown = load.okCount();
  t.same((await validateAll(stack, late)).counts, { 200: PER_SET }, 'replay license: the late tokens redeemed, with no worker to persist them');
  await sleep(Math.max(0, workerDownAt + WORKER_DOWN_MS - Date.now()));

  // the loss: writes stopped, the queued redemptions read, Redis SIGKILLed
  const { queued, killedAt } = await killFrozen(stack);
  const persistedOfQueued = await usedInPostgres(stack, queued); // the dead worker may have written some
  const expectedLost = new Set([...queued].filter((id) => !persistedOfQueued.has(id)));
  const okAtKill = load.okCount();
  await sleep(300); // no 200 can come while Redis is down: the 200s so far are those before the loss
  const okBeforeLoss = load.okCount();
  const lostAnswersBefore = load.books.reduce((n, b) => n + b.lost.size, 0);
  await stack.redis.restart(); // the same arguments: no persistence, so empty
  const upAt = Date.now();
  const earlyMarker = stack.keys.forLicense(replayLicense.firmaId).markers(claimsOf(early[0] as string).exp * 1000).key;
  t.equal(await stack.redisClient.hget(earlyMarker, claimsOf(early[0] as string).token_id), null, 'Redis came back empty');
  const watch = new CountWatch(stack, [replayLicense, ...licenses].map((l) => l.firmaId));
  const serving = await untilServing(stack, replayLicense.licenseKey);
  t.ok(serving >= 0, `the service serves again by itself (${serving} ms after Redis was up)`);

  // fail closed: no token of before the loss redeems, redeemed or not
  const replayed = await validateAll(stack, [...early, ...late]);
  t.same(replayed.counts, { used: 2 * PER_SET }, 'no token redeemed before the loss redeems again: 400 "already used"', { wrong: replayed.wrong.slice(0, 3) });
  const refused = await validateAll(stack, outstanding);
  t.same(refused.counts, { used: outstanding.length }, `every token outstanding at the loss (${outstanding.length}) is refused: 400 "already used"`,
    { wrong: refused.wrong.slice(0, 3) });

  // new tokens work, the load goes on
  const fresh = await new TokenSource(stack.client(), replayLicense).many(5);
  t.same((await validateAll(stack, fresh)).counts, { 200: 5 }, 'tokens issued after the loss redeem');
  await load.waitForOk(okBeforeLoss + 200, 10_000).catch(() => {});
  const firstOk = load.timeline.find((e) => e.at >= upAt && e.outcome === '200');
  t.ok(firstOk !== undefined, `the load redeems again after the loss (first 200 ${firstOk ? firstOk.at - upAt : '-'} ms after Redis was up)`);
  t.ok(load.okCount() >= okBeforeLoss + 200, `the load went on (${load.okCount() - okBeforeLoss} 200s after the loss)`);

  // the worker back: the new streams drain
  await stack.startWorker();
  await sleep(500);
  await load.stop();
  const retries = await load.retryUnsettled();
  const retriedUsed = load.books.reduce((n, b) => n + b.retriedUsed.size, 0);
  t.same(Object.keys(retries).filter((k) => k !== '200' && k !== '400'), [], `every unanswered validate retried got an answer (${JSON.stringify(retries)})`);
  t.comment(`validates refused during the loss: ${JSON.stringify(load.others())}; retried: ${JSON.stringify(retries)} (${retriedUsed} "already used")`);

  const lost = await checkLossBooks(t, stack, load, new Set([...expectedLost].filter((id) => !late.some((jwt) => claimsOf(jwt).token_id === id))));
  await watch.stop();
  t.ok(watch.samples >= 10, `license counts sampled ${watch.samples} times after the loss`);
  t.same(watch.below, [], 'no Redis license count ever fell below Postgres\'s used_quota after the loss');
  const { checkQuotaUsed, ...replay } = await licenseStateInUse(stack, replayLicense);
  t.same(replay, { pgUsed: PER_SET + 5, rows: 3 * PER_SET + 5, usedRows: PER_SET + 5, redisU: PER_SET + 5 },
    'replay license: the early and the fresh redemptions counted, the late ones lost');
  if (checkQuotaUsed !== null) t.equal(checkQuotaUsed, PER_SET + 5, 'replay license: check-quota rebuilt the copy the worker dropped, and shows them');
  const lateIds = late.map((jwt) => claimsOf(jwt).token_id);
  t.same(lateIds.filter((id) => !expectedLost.has(id)), [], 'the late redemptions were queued, unpersisted, at the kill');

  // the measured window
  t.equal(lost.size + PER_SET, expectedLost.size, `lost = 200s - 'used' rows = the queued redemptions at the kill (${expectedLost.size})`);
  const rate = (okAtKill - okAtWorkerDown) / ((killedAt - workerDownAt) / 1000);
  const answeredBefore = okBeforeLoss + 2 * PER_SET;
  t.comment(`loss window: of ${answeredBefore} redemptions answered 200 before the loss, ${expectedLost.size} were not in Postgres ` +
    `when Redis was lost (${lost.size} of the load + ${PER_SET} of the test), all of them queued in the streams; the worker had been ` +
    `down ${killedAt - workerDownAt} ms with the load at ${Math.round(rate)}/s; ${queued.size - expectedLost.size} queued ones ` +
    `the killed worker had persisted already; validates unanswered at the kill: ${lostAnswersBefore}`);
});

// The same loss while Postgres hangs (the proxy's blackhole) instead of the worker killed: the
// worker, running in the server, holds the batch it read, its statement unanswered, and
// retries it once Postgres is back. That batch outlives Redis (it is in the worker's memory),
// so it reaches Postgres after the loss; the license copies rebuilt meanwhile must count it
// all the same: never below Postgres, and equal to it once drained.

t.test('Redis restarted empty while Postgres hangs: the batch the worker holds is counted too', { timeout: 60_000 }, async (t) => {
  const stack = await startStack(t, { label: 'fault-redis-lost-pg', proxyPostgres: true });
  const proxy = stack.proxy;
  if (!proxy) throw new Error('no proxy');
  const [burstLicense, ...licenses] = await stack.createLicenses(5);
  if (!burstLicense) throw new Error('no license');
  const burst = await new TokenSource(stack.client(), burstLicense).many(16);
  const load = new Load(stack, licenses, { concurrency: 8 });
  await load.start();
  await load.waitForOk(200);
  // the worker idle when Postgres starts to hang, so the next batch it reads, redemptions of
  // one license that arrive together, is never written before the loss
  await load.stop();
  t.ok(await stack.drained(10_000), 'the worker idle, everything written');
  proxy.blackhole();
  const cutAt = Date.now();
  t.same((await validateAll(stack, burst)).counts, { 200: 16 }, 'a burst of redemptions of one license');
  await sleep(100);
  await load.start();
  await sleep(WORKER_DOWN_MS);
  const held = await stack.streamState();
  const { queued, killedAt } = await killFrozen(stack);
  const persistedOfQueued = await usedInPostgres(stack, queued);
  await sleep(300);
  const okBeforeLoss = load.okCount();
  await stack.redis.restart();
  const upAt = Date.now();
  const watch = new CountWatch(stack, [burstLicense, ...licenses].map((l) => l.firmaId));
  await sleep(500);
  proxy.restore();
  const restoredAt = Date.now();
  // a customer looks at the burst license: its copy is rebuilt from Postgres
  const looked = await timedCall(stack.url(), 'GET', `/api/License/check-quota/${burstLicense.licenseKey}`);
  t.equal(looked.outcome.kind === 'answer' ? looked.outcome.status : looked.outcome.kind, 200, 'check-quota of the burst license after the loss');
  await load.waitForOk(okBeforeLoss + 300, 15_000).catch(() => {});
  await sleep(6000); // the worker's retry of the batch it holds comes within 5 s
  await load.stop();
  await load.retryUnsettled();

  const unpersistedAtKill = new Set([...queued].filter((id) => !persistedOfQueued.has(id)));
  const persistedAfter = [...await usedInPostgres(stack, unpersistedAtKill)];
  const burstIds = new Set(burst.map((jwt) => claimsOf(jwt).token_id));
  const lost = await checkLossBooks(t, stack, load,
    new Set([...unpersistedAtKill].filter((id) => !persistedAfter.includes(id) && !burstIds.has(id))));
  const burstState = await licenseStateInUse(stack, burstLicense);
  t.equal(burstState.pgUsed, burstState.usedRows, 'burst license: used_quota = \'used\' rows', { ...burstState });
  if (burstState.checkQuotaUsed !== null) t.equal(burstState.checkQuotaUsed, burstState.usedRows, 'burst license: check-quota rebuilt the copy the worker dropped, and shows the \'used\' rows');
  t.equal(burstState.redisU, burstState.usedRows, 'burst license: Redis \'u\' = \'used\' rows', { ...burstState });
  await watch.stop();
  const lasting = watch.lasting();
  t.same(lasting, [], `no Redis license count stayed below Postgres's used_quota after the loss (below in ${watch.below.length} license samples of ${watch.samples} rounds, each resolved by the next)`);
  t.comment(`Postgres hung ${killedAt - cutAt} ms before the loss; the worker held ${held.pending} events read and unacknowledged; ` +
    `${queued.size} redemptions queued at the kill (${unpersistedAtKill.size} not in Postgres then, ${persistedAfter.length} of which the worker wrote after the loss); lost: ${lost.size}; ` +
    `Redis up ${restoredAt - upAt} ms before Postgres came back; burst license ${JSON.stringify(burstState)}`);
  if (process.env.FAULT_DEBUG) t.comment(JSON.stringify(logSummary(stack), null, 1));

});
