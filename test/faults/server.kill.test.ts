import t from 'tap';
import { sleep } from '../helpers/wait.js';
import { checkBooks } from '../helpers/faults/books.js';
import { Load } from '../helpers/faults/load.js';
import { startStack } from '../helpers/faults/stack.js';

// Fault 3: the server (with its usage worker) SIGKILLed under load, twice, and restarted on
// the same Redis and Postgres. A redemption either ran whole or not at all: a client that
// saw no answer retries, and the retry answers 200 only if the first attempt never ran,
// else 400 "already used". No token is spent twice; every 200 is recorded in Postgres.

const KILLS = 2;

t.test('server SIGKILLed under load and restarted: no double spend, every 200 recorded', { timeout: 90_000 }, async (t) => {
  const stack = await startStack(t, {
    label: 'fault-server-kill',
    // the restarted worker reclaims what the killed one had read and not acknowledged
    env: { WORKER_BATCH_SIZE: '20', WORKER_CLAIM_IDLE_MS: '1000' },
  });
  const licenses = await stack.createLicenses(4);
  const load = new Load(stack, licenses, { concurrency: 16, timeoutMs: 3000 });
  await load.start();
  await load.waitForOk(300);

  for (let k = 0; k < KILLS; k++) {
    await sleep(500 + Math.floor(Math.random() * 1000));
    const exit = await stack.killServer();
    t.equal(exit.signal, 'SIGKILL', `kill ${k + 1}: the server died by SIGKILL`);
    await sleep(500);
    const okBefore = load.okCount();
    await stack.startServer(0);
    await load.waitForOk(okBefore + 200);
  }
  await sleep(500);
  await load.stop();

  const lost = load.unsettledCount();
  const failures = load.others();
  t.ok(lost > 0, `the kills hit requests in flight: ${lost} validates without an answer (${JSON.stringify(failures)})`);
  const retries = await load.retryUnsettled();
  t.equal(load.unsettledCount(), 0, 'every retry got an answer');
  const settled = Object.entries(retries).filter(([k]) => k === '200' || k === '400');
  t.same(Object.fromEntries(settled), retries, `each retry answered 200 or 400 (${JSON.stringify(retries)})`);
  const retried400 = load.books.reduce((n, b) => n + b.retriedUsed.size, 0);
  t.equal(retried400, retries['400'] ?? 0, 'every retry refused with 400 says "already used"');

  await checkBooks(t, stack, load, { exact: false, drainTimeoutMs: 20_000 });
});
