import t from 'tap';
import { pollUntil, sleep } from '../helpers/wait.js';
import { checkBooks } from '../helpers/faults/books.js';
import { Load } from '../helpers/faults/load.js';
import type { Outcome } from '../helpers/http.js';
import { startStack } from '../helpers/faults/stack.js';

// Fault 2: Postgres unreachable for 30 s under load. Nothing on the request path waits for
// Postgres, so validate keeps answering 200 throughout; /healthz says Postgres is down and
// shows the events waiting; once Postgres is back the backlog drains and the books balance.

const OUTAGE_MS = 30_000;
const SLICE_MS = 5_000;

t.test('Postgres down for 30 s under load: validate answers 200 throughout, the backlog drains', { timeout: 120_000 }, async (t) => {
  const stack = await startStack(t, { label: 'fault-pg-down', proxyPostgres: true });
  const proxy = stack.proxy;
  if (!proxy) throw new Error('no proxy');
  const licenses = await stack.createLicenses(4);
  const load = new Load(stack, licenses, { concurrency: 4, pauseMs: 5 });
  await load.start();
  await load.waitForOk(100);
  await sleep(500);

  const cutAt = Date.now();
  proxy.cut();
  const healths: { at: number; outcome: Outcome }[] = [];
  while (Date.now() - cutAt < OUTAGE_MS) {
    await sleep(Math.min(4_000, OUTAGE_MS - (Date.now() - cutAt)));
    if (Date.now() - cutAt < OUTAGE_MS - 500) healths.push({ at: Date.now() - cutAt, outcome: await stack.health() });
  }
  const restoredAt = Date.now();
  proxy.restore();
  await sleep(2_000);
  await load.stop();

  // validate during the outage: every answer a 200, in every 5 s of it
  const during = load.timeline.filter((e) => e.at >= cutAt && e.at < restoredAt);
  const refused: Record<string, number> = {};
  for (const e of during) if (e.outcome !== '200') refused[e.outcome] = (refused[e.outcome] ?? 0) + 1;
  t.same(refused, {}, `every validate during the outage answered 200 (${during.length} of them)`);
  const slices = Array.from({ length: Math.floor(OUTAGE_MS / SLICE_MS) }, (_, i) =>
    during.filter((e) => e.outcome === '200' && e.at >= cutAt + i * SLICE_MS && e.at < cutAt + (i + 1) * SLICE_MS).length);
  t.ok(slices.every((n) => n > 0), `validate 200s in every ${SLICE_MS / 1000} s of the outage (${slices.join(', ')})`);
  t.same(load.mintFailures(), {}, 'sign-token kept answering 200 too');

  // /healthz during the outage: Postgres down, Redis up, the events waiting
  t.ok(healths.length >= 5, `/healthz asked through the outage (${healths.length} times)`);
  const lags: number[] = [];
  for (const { at, outcome } of healths) {
    const seen = outcome.kind === 'answer'
      ? { status: outcome.status, postgres: outcome.body?.postgres, redis: outcome.body?.redis }
      : { status: outcome.kind };
    t.same(seen, { status: 503, postgres: 'down', redis: 'ok' }, `/healthz ${Math.round(at / 1000)} s into the outage`);
    const lag = outcome.kind === 'answer' ? outcome.body?.usageLag : null;
    t.ok(typeof lag === 'number' && lag > 0, `/healthz usageLag > 0 ${Math.round(at / 1000)} s in (${lag})`);
    lags.push(Number(lag));
  }
  t.ok((lags.at(-1) ?? 0) > (lags[0] ?? 0), `the backlog grew during the outage (${lags.join(' -> ')})`);
  const last = healths.at(-1);
  const waitedMs = last?.outcome.kind === 'answer' ? Number(last.outcome.body?.usageLagMs) : NaN;
  t.ok(waitedMs >= (last?.at ?? 0) - 2_000 && waitedMs <= (last?.at ?? 0) + 3_000,
    `/healthz usageLagMs: the oldest waiting event is as old as the outage (${waitedMs} ms, ${last?.at} ms in)`);

  // after: the backlog drains, /healthz is back to 200, and the books balance exactly
  await checkBooks(t, stack, load, { exact: true, drainTimeoutMs: 30_000 });
  // its report may be up to a second old: asked until it shows the drain
  const after = await pollUntil(() => stack.health(), (o) => o.kind === 'answer' && o.status === 200 && o.body?.usageLag === 0, { timeoutMs: 10_000, intervalMs: 100 });
  t.same(after.kind === 'answer' ? { status: after.status, postgres: after.body?.postgres, usageLag: after.body?.usageLag, usageLagMs: after.body?.usageLagMs } : after,
    { status: 200, postgres: 'ok', usageLag: 0, usageLagMs: 0 }, '/healthz after the restore: Postgres ok, no lag');
});
