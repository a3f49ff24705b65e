import t from 'tap';
import { sleep } from '../helpers/wait.js';
import { checkExactBooks, licenseState } from '../helpers/faults/books.js';
import { checkOutage, probedLoad, probeWhile, untilServing } from '../helpers/faults/probe.js';
import { failedLoginSlots } from '../helpers/faults/redis.js';
import { logSummary, startStack } from '../helpers/faults/stack.js';
import { validateAll, validateWhile } from '../helpers/faults/tokens.js';
import { TokenSource } from '../helpers/tokens.js';

// Fault 4: Redis stopped under load (SIGTERM; with appendfsync always, so it comes back with
// every write it acknowledged) and started again 4 s later on the same port. Meanwhile each
// public endpoint answers 503 in its published shape with Retry-After within the command
// timeout (REDIS_COMMAND_TIMEOUT_MS, 1000 ms; 500 ms more allowed for scheduling on a
// loaded machine) and spends nothing; the service reconnects by itself, and the books
// balance exactly once the refused validates are retried.
//
// The Redis that comes back is a new process, which the service cannot tell from a replica
// promoted behind the same address (src/redis/restarts.ts): it is fenced whatever its fsync
// setting, so tokens issued before are refused as used, spending nothing, and clients get
// new ones. The load mints a token and validates it; while Redis is down its mints fail, so
// the redemptions that meet the outage are those of a probe license kept out of the load: 40
// tokens minted before, validated over and over during the outage, refused after (fenced),
// while tokens minted after redeem.

const OUTAGE_MS = 4000;
const COMMAND_TIMEOUT_MS = 1000;
const SLACK_MS = 500;
const HELD = 40;

t.test('Redis stopped for 4 s under load: 503 within the timeout, nothing spent, recovery by itself', { timeout: 60_000 }, async (t) => {
  const stack = await startStack(t, {
    label: 'fault-redis-stopped',
    redisArgs: ['--appendonly', 'yes', '--appendfsync', 'always'],
    // a dead consumer's pending events are reclaimed after a second, not 30 (the worker
    // re-reads its own after a failure; this bounds what a missed case would cost the books)
    env: { WORKER_CLAIM_IDLE_MS: '1000' },
  });
  const { probe, held, load } = await probedLoad(stack, await stack.createLicenses(5), HELD);

  const stopping = Date.now();
  await stack.redis.signal('SIGTERM');
  const stoppedAt = Date.now();
  t.comment(`Redis stopped (SIGTERM to exit: ${stoppedAt - stopping} ms)`);
  const probing = () => Date.now() - stoppedAt < OUTAGE_MS - COMMAND_TIMEOUT_MS - SLACK_MS;
  const [rounds, redemptions] = await Promise.all([probeWhile(stack, probe, probing), validateWhile(stack, held, probing)]);
  await sleep(Math.max(0, stoppedAt + OUTAGE_MS - Date.now()));
  const restartedAt = Date.now();
  await stack.redis.restart();
  const upAt = Date.now();

  // recovery, with no server restart: the first check-quota 200 and validate 200 after Redis is up
  const recovered = await untilServing(stack, probe.lic.licenseKey);
  const okAtRestart = load.okCount();
  await load.waitForOk(okAtRestart + 200, 10_000).catch(() => {});
  const firstOk = load.timeline.find((e) => e.at >= upAt && e.outcome === '200');
  await load.stop();

  // during the outage: the published 503, in time
  checkOutage(t, load, {
    what: 'stopped', rounds, redemptions, from: stoppedAt, to: restartedAt, minRounds: 2, minRedemptions: 16,
  }, COMMAND_TIMEOUT_MS + SLACK_MS);

  // recovery by itself, bounded by the client's reconnection backoff (ioredis: doubling from
  // 50 ms, at most 5 s plus up to 200 ms of jitter)
  t.ok(recovered >= 0 && recovered <= 5500, `check-quota answered 200 ${recovered} ms after Redis was up`);
  t.ok(firstOk !== undefined && firstOk.at - upAt <= 5500, `the load's first validate 200 came ${firstOk ? firstOk.at - upAt : '-'} ms after Redis was up`);
  t.ok(load.okCount() >= okAtRestart + 200, `the load went on after the restart (${load.okCount() - okAtRestart} more 200s)`);
  t.equal(stack.servers[0]?.child.exitCode, null, 'the server was never restarted');
  t.comment(`recovery after Redis was up: check-quota ${recovered} ms, validate ${firstOk ? firstOk.at - upAt : '-'} ms`);

  // nothing spent by the refused calls: a retry redeems, unless the call was in flight when
  // Redis went away (its script may have run, the answer lost with the connection)
  const retries = await load.retryUnsettled();
  t.same(Object.keys(retries).filter((k) => k !== '200' && k !== '400'), [], `every refused validate of the load retried answers 200 or 400 (${JSON.stringify(retries)})`);
  t.comment(`validates of the load refused: ${JSON.stringify(load.others())}; retried: ${JSON.stringify(retries)}; failed-login slots left: ${await failedLoginSlots(stack)}`);
  // calls sent before Redis exited (within their timeout): their scripts may have run, their answers lost
  await checkExactBooks(t, stack, load, 8, { from: stopping - COMMAND_TIMEOUT_MS, to: stoppedAt }, upAt);
  if (process.env.FAULT_DEBUG) t.comment(JSON.stringify({ streams: await stack.streamState(), log: logSummary(stack) }, null, 1));

  t.same(await licenseState(stack, probe.lic.firmaId), { pgUsed: 0, rows: HELD + 1, usedRows: 0, redisU: 0 },
    'probe license: no quota used, no token issued by the refused get-tokens and sign-tokens');
  const after = await validateAll(stack, [probe.signToken, ...held]);
  t.same(after.counts, { used: HELD + 1 }, 'every probe token issued before the restart is refused as used (fenced), spending nothing');
  const fresh = await new TokenSource(stack.client(), probe.lic).many(3);
  t.same((await validateAll(stack, fresh)).counts, { 200: 3 }, 'tokens issued after the restart redeem');
  t.ok(await stack.drained(10_000), 'their events reach Postgres');
  t.same(await licenseState(stack, probe.lic.firmaId), { pgUsed: 3, rows: HELD + 4, usedRows: 3, redisU: 3 },
    'probe license: exactly those redemptions counted');
});
