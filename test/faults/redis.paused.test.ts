import t from 'tap';
import { sleep } from '../helpers/wait.js';
import { checkExactBooks, licenseState } from '../helpers/faults/books.js';
import { checkOutage, probedLoad, probeWhile, untilServing } from '../helpers/faults/probe.js';
import { failedLoginSlots } from '../helpers/faults/redis.js';
import { startStack } from '../helpers/faults/stack.js';
import { validateAll, validateWhile } from '../helpers/faults/tokens.js';

// Fault 5: Redis hung (SIGSTOP) for 10 s under load, then SIGCONT. The connections stay
// open and every command sent meanwhile waits in Redis's socket: each request answers 503
// in its endpoint's published shape within the command timeout (REDIS_COMMAND_TIMEOUT_MS,
// 1000 ms; 500 ms more allowed for scheduling), nothing hangs, and when Redis runs again the
// scripts queued during the pause reach it past their deadline and change nothing. So the
// books balance exactly: validate 200s = 'used' rows = used_quota = Redis 'u', and every
// token whose client got 503 redeems when retried, but for the few calls whose scripts
// ran just before the pause, their answers still unwritten (in flight, as in redis.stopped).
//
// As in redis.stopped, the redemptions that meet the pause are those of a probe license
// kept out of the load (40 tokens minted before, validated over and over during the pause).

const PAUSE_MS = 10_000;
const COMMAND_TIMEOUT_MS = 1000;
const SLACK_MS = 500;
const HELD = 40;

t.test('Redis paused for 10 s under load: 503 within the timeout, nothing queued is spent, exact books', { timeout: 60_000 }, async (t) => {
  const stack = await startStack(t, {
    label: 'fault-redis-paused',
    // a dead consumer's pending events are reclaimed after a second, not 30 (the worker
    // re-reads its own after a failure; this bounds what a missed case would cost the books)
    env: { WORKER_CLAIM_IDLE_MS: '1000' },
  });
  const { probe, held, load } = await probedLoad(stack, await stack.createLicenses(5), HELD);
  const slotsBefore = await failedLoginSlots(stack);

  const pausing = Date.now();
  await stack.redis.signal('SIGSTOP');
  const pausedAt = Date.now();
  const probing = () => Date.now() - pausedAt < PAUSE_MS - COMMAND_TIMEOUT_MS - SLACK_MS;
  const [rounds, redemptions] = await Promise.all([probeWhile(stack, probe, probing), validateWhile(stack, held, probing)]);
  await sleep(Math.max(0, pausedAt + PAUSE_MS - Date.now()));
  const okBeforeResume = load.okCount();
  await stack.redis.signal('SIGCONT');
  const resumedAt = Date.now();

  const recovered = await untilServing(stack, probe.lic.licenseKey);
  await load.waitForOk(okBeforeResume + 200, 10_000).catch(() => {});
  const firstOk = load.timeline.find((e) => e.at >= resumedAt && e.outcome === '200');
  await load.stop();

  // during the pause: the published 503, in time, for every endpoint and every redemption;
  // nothing hangs: every request of the load got an answer, and only 503 when refused
  checkOutage(t, load, {
    what: 'paused', rounds, redemptions, from: pausedAt, to: resumedAt, minRounds: 5, minRedemptions: 40,
  }, COMMAND_TIMEOUT_MS + SLACK_MS);

  // recovery by itself
  t.ok(recovered >= 0 && recovered <= 3000, `check-quota answered 200 ${recovered} ms after SIGCONT`);
  t.ok(firstOk !== undefined && firstOk.at - resumedAt <= 3000, `the load's first validate 200 came ${firstOk ? firstOk.at - resumedAt : '-'} ms after SIGCONT`);
  t.ok(load.okCount() >= okBeforeResume + 200, `the load went on after SIGCONT (${load.okCount() - okBeforeResume} more 200s)`);
  t.comment(`recovery after SIGCONT: check-quota ${recovered} ms, validate ${firstOk ? firstOk.at - resumedAt : '-'} ms`);

  // the books, exactly: what was queued in Redis during the pause spent nothing
  const retries = await load.retryUnsettled();
  t.same(Object.keys(retries).filter((k) => k !== '200' && k !== '400'), [], `every validate of the load refused with 503 retried answers 200 or, in flight at the pause, 400 (${JSON.stringify(retries)})`);
  t.comment(`validates of the load refused: ${JSON.stringify(load.others())}; retried: ${JSON.stringify(retries)}; failed-login slots: ${slotsBefore} before, ${await failedLoginSlots(stack)} after`);
  // a call whose script ran just before the pause, its answer not yet written back, is
  // answered 503 by its timeout all the same: in flight as when Redis exits (redis.stopped),
  // it may have issued or spent (at most one per caller of the load, 8); a retry finds it
  await checkExactBooks(t, stack, load, 8, { from: pausing - COMMAND_TIMEOUT_MS, to: pausedAt });
  t.same(await licenseState(stack, probe.lic.firmaId), { pgUsed: 0, rows: HELD + 1, usedRows: 0, redisU: 0 },
    'probe license: no quota used, no token issued by the refused get-tokens and sign-tokens');
  const after = await validateAll(stack, [probe.signToken, ...held]);
  t.same(after.counts, { 200: HELD + 1 }, 'every probe token refused during the pause redeems now, once');
  t.ok(await stack.drained(10_000), 'their events reach Postgres');
  t.same(await licenseState(stack, probe.lic.firmaId), { pgUsed: HELD + 1, rows: HELD + 1, usedRows: HELD + 1, redisU: HELD + 1 },
    'probe license: exactly those redemptions counted');
});
