import t from 'tap';
import { sleep, waitFor } from '../helpers/wait.js';
import { checkBooks } from '../helpers/faults/books.js';
import { Load } from '../helpers/faults/load.js';
import { startStack } from '../helpers/faults/stack.js';

// SIGTERM while Postgres hangs (connections accepted, never answered): the usage worker
// cannot persist what is queued, so the process must give up within its shutdown budget,
// say in its log how many usage events it left in the streams, and leave them there; a
// new server, with Postgres back, persists them and the books balance.

const SHUTDOWN_TIMEOUT_MS = 3000;
const EXIT_BOUND_MS = SHUTDOWN_TIMEOUT_MS + 5000;

t.test('SIGTERM with Postgres unreachable: bounded exit, the events left in Redis and named in the log', { timeout: 90_000 }, async (t) => {
  const stack = await startStack(t, {
    label: 'fault-shutdown-pgdown',
    proxyPostgres: true,
    env: { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), WORKER_CLAIM_IDLE_MS: '1000', LOG_LEVEL: 'info' },
  });
  const proxy = stack.proxy;
  if (!proxy) throw new Error('no proxy');
  const licenses = await stack.createLicenses(2);
  const load = new Load(stack, licenses, { concurrency: 4 });

  // some redemptions persisted while Postgres answers
  await load.start();
  await load.waitForOk(50);
  await load.stop();
  t.ok(await stack.drained(10_000), 'the first redemptions reach Postgres');

  // Postgres hangs; more redemptions queue in the streams
  proxy.blackhole();
  const okBefore = load.okCount();
  await load.start();
  await load.waitForOk(okBefore + 40);
  await load.stop();
  t.same(load.others(), {}, 'validate answered 200 with Postgres hanging');
  await sleep(500);
  const queued = await stack.lag();
  t.ok(queued > 0, `usage events wait in the streams (${queued})`);

  const server = stack.servers[0];
  if (!server) throw new Error('no server');
  const sentAt = Date.now();
  const exit = await server.stop('SIGTERM', EXIT_BOUND_MS);
  const tookMs = Date.now() - sentAt;
  t.notOk(exit.timedOut, `the process exited within SHUTDOWN_TIMEOUT_MS + 5 s (${EXIT_BOUND_MS} ms; took ${tookMs} ms)`);
  if (exit.timedOut) await stack.killServer();
  else t.equal(exit.signal, null, `it exited by itself (code ${exit.code})`);

  const left = await stack.lag();
  t.equal(left, queued, 'the queued usage events are still in Redis');
  const record = server.records().find((r) => typeof r.msg === 'string' && r.msg.includes('left in the streams'));
  t.ok(record, 'the log says usage events were left in the streams', {
    lastLines: server.lines.slice(-5).map((l) => l.text),
  });
  t.equal(record?.usageLag, left, 'the log line names how many (usageLag)');

  // Postgres back, a new server: its worker takes over the events and persists them
  proxy.restore();
  await stack.startServer(0);
  await waitFor('the new server persists the events left behind', async () => (await stack.lag()) === 0, 20_000)
    .catch(() => {});
  await checkBooks(t, stack, load, { exact: true, drainTimeoutMs: 5_000 });
});
