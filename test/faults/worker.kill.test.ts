import t from 'tap';
import { pollUntil, sleep } from '../helpers/wait.js';
import { checkBooks } from '../helpers/faults/books.js';
import { Load } from '../helpers/faults/load.js';
import { startStack } from '../helpers/faults/stack.js';

// Fault 1: the standalone usage worker SIGKILLed in the middle of a batch, again and again,
// under load. Its read-but-unacknowledged events stay pending in the consumer group; the
// restarted worker reclaims them (WORKER_CLAIM_IDLE_MS) and every event reaches Postgres
// exactly once: the books balance exactly.

const KILLS = 4;

t.test('usage worker SIGKILLed mid-batch under load: every event persisted exactly once', { timeout: 90_000 }, async (t) => {
  const stack = await startStack(t, {
    label: 'fault-worker-kill',
    standaloneWorker: true,
    env: { WORKER_BATCH_SIZE: '5', WORKER_BLOCK_MS: '20', WORKER_CLAIM_IDLE_MS: '1000' },
  });
  const licenses = await stack.createLicenses(4);
  const load = new Load(stack, licenses, { concurrency: 8 });
  await load.start();
  await load.waitForOk(100);

  const leftPending: number[] = [];
  for (let k = 0; k < KILLS; k++) {
    await sleep(800 + Math.floor(Math.random() * 700));
    // killed while it holds a batch it has not acknowledged
    const { exit, pending } = await stack.killWorkerHoldingBatch();
    t.equal(exit.signal, 'SIGKILL', `kill ${k + 1}: the worker died by SIGKILL`);
    leftPending.push(pending);
    await sleep(300);
    await stack.startWorker();
  }
  await sleep(1500);
  await load.stop();

  t.ok(leftPending.some((n) => n > 0), `a killed worker left events pending (${leftPending.join(', ')})`);
  t.ok(load.okCount() >= 500, `the load went on through the kills (${load.okCount()} validate 200s)`);
  t.same(load.others(), {}, 'every validate answered 200 while the worker died and came back');
  await checkBooks(t, stack, load, { exact: true, drainTimeoutMs: 20_000 });
  t.equal(await stack.pending(), 0, 'nothing left pending on any consumer, dead or alive');
  // its report may be up to a second old: asked until it shows the drain
  const health = await pollUntil(() => stack.health(), (o) => o.kind === 'answer' && o.body?.usageLag === 0, { timeoutMs: 10_000, intervalMs: 100 });
  t.equal(health.kind === 'answer' ? health.body?.usageLag : health.kind, 0, '/healthz: usageLag back to 0');
});
