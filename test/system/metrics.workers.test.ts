import t from 'tap';
import type { DeployedService } from '../helpers/deployed.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { parseMetrics, promtool, scrape, wentBack, type Scrape } from '../helpers/metrics.js';
import { recordOf as record, SEVERAL_WORKERS } from '../helpers/processes.js';
import { oneRequestPerConnection } from '../helpers/sockets.js';
import { getTokenPair, signOne } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// GET /metrics of the service as `npm start` runs it: WORKERS unset, so one process per core
// (docs/operations.md#metrics). Requests go on connections of their own, and /proc shows which child
// the kernel gave each to: one scrape, through any child, counts every child's answers;
// counters never go back between scrapes, nor when a child is SIGKILLed and started again
// (what it reported stays counted, its successor's answers are added); Node's figures come
// once per child, the usage gauges read from Redis once; promtool finds nothing unexplained.

const HEALTHZ = { method: 'GET', route: '/healthz', status: '200' };
const REQUESTS = 'license_http_requests_total';

/** The warnings promtool gives on prom-client's default metrics, explained in docs/operations.md#metrics: nothing else may appear. */
const EXPLAINED = new Set(['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']
  .map((name) => `${name} non-counter metrics should not have "_total" suffix`));

t.test('WORKERS as npm start leaves it: one scrape sums every child, counters never go back, a child killed and restarted', async (t) => {
  const h = await startHarness(t, 'metricsworkers', { ...NO_RATE_LIMITS, WORKERS: SEVERAL_WORKERS });
  const server = (h.deployment as DeployedService).server;
  const allUp = record(await server.lineMatching((l) => record(l)?.msg === 'listening: all children', 30_000, 'every child listening'));
  let pids = allUp?.pids as number[];
  const children = pids.length;
  t.ok(children >= 2, `${children} children (${pids.join(', ')})`);
  const port = h.service.port;
  const scrapes: Scrape[] = [await scrape(h)];
  const next = async (what: string): Promise<Scrape> => {
    const s = await scrape(h);
    t.same(wentBack(scrapes.at(-1) as Scrape, s), [], `${what}: no counter went back`);
    scrapes.push(s);
    return s;
  };

  // 60 answers over connections that reach every child
  const first = await oneRequestPerConnection(port, pids, Array(60).fill({ method: 'GET', path: '/healthz' }));
  t.ok(first.every((a) => a.status === 200));
  t.equal(new Set(first.map((a) => a.pid)).size, children, 'the 60 connections reached every child');
  const summed = await next('after 60 answers');
  t.equal(summed.value(REQUESTS, HEALTHZ) - (scrapes[0] as Scrape).value(REQUESTS, HEALTHZ), 60, 'one scrape counts the 60, summed over the children');
  t.equal(summed.value('license_http_request_duration_seconds_count', { route: '/healthz' })
    - (scrapes[0] as Scrape).value('license_http_request_duration_seconds_count', { route: '/healthz' }), 60, 'and their 60 latencies');

  // scrapes at once, each on a connection of its own: through every child, the same figures
  // (the kernel spreads connections at random: 24 all reaching one child is a 2^-23 chance)
  const views = await oneRequestPerConnection(port, pids, Array(24).fill({ method: 'GET', path: '/metrics' }));
  t.equal(new Set(views.map((v) => v.pid)).size, children, 'the scrapes were answered by every child');
  t.same(views.map((v) => parseMetrics(v.body).value(REQUESTS, HEALTHZ)), Array(24).fill(summed.value(REQUESTS, HEALTHZ)),
    'each answers the instance\'s count');

  // what comes once and what comes per child
  const byChild = (name: string) => summed.find(name).map((s) => s.labels.child).sort();
  const childLabels = pids.map((_, i) => String(i));
  for (const name of ['nodejs_heap_size_used_bytes', 'process_start_time_seconds', 'process_cpu_user_seconds_total', 'nodejs_eventloop_lag_p99_seconds']) {
    t.same(byChild(name), childLabels, `${name}: one series per child`);
  }
  t.same(byChild('license_child_up'), childLabels);
  t.ok(summed.find('license_child_up').every((s) => s.value === 1), 'every child answered');
  for (const name of ['license_usage_backlog_events', 'license_usage_lag_seconds', 'license_usage_dead_letters']) {
    const series = summed.find(name);
    t.same(series.map((s) => s.labels), [{}], `${name}: read from Redis, once (not once per child)`);
    t.equal(summed.text.split('\n').filter((l) => l === `# TYPE ${name} gauge`).length, 1);
  }
  t.same(summed.find(REQUESTS, HEALTHZ).map((s) => s.labels.child), [undefined], 'the service\'s own counters: one series, no child label');

  // the usage worker runs in child 0 only: its events are the instance's
  const lic = await h.createLicense({ totalQuota: 100 });
  const pair = await getTokenPair(h, lic);
  for (let i = 0; i < 3; i++) await signOne(h, pair.accessToken);
  t.equal((await h.validate(pair.signToken)).status, 200);
  const beforeWrites = scrapes.at(-1) as Scrape;
  const written = await pollUntil(() => scrape(h), (s) => s.value('license_usage_events_written_total') - beforeWrites.value('license_usage_events_written_total') >= 5);
  t.equal(written.value('license_usage_events_written_total') - beforeWrites.value('license_usage_events_written_total'), 5,
    'the worker\'s 5 events (4 issued, 1 redeemed), once');
  await next('after the worker wrote');

  // promtool on a real scrape: nothing but the warnings docs/operations.md#metrics explains
  const linted = await promtool((scrapes.at(-1) as Scrape).text);
  t.same(linted.problems.filter((p) => !EXPLAINED.has(p)), [], `promtool check metrics: nothing unexplained (exit ${linted.code})`);
  t.ok(linted.code === 0 || linted.code === 3, 'promtool parsed the text (3: lint warnings only)');

  // a child SIGKILLed: the primary starts it again; what it had reported stays counted
  const victimIndex = children - 1;
  const victim = pids[victimIndex] as number;
  const beforeKill = await next('before the kill');
  process.kill(victim, 'SIGKILL');
  // once the primary saw it die (a connection handed to it before that is reset: docs/operations.md#processes)
  await server.lineMatching((l) => record(l)?.msg === 'child died: restarting it' && record(l)?.pid === victim, 10_000, 'the death seen');
  await next('right after the death');
  const again = record(await server.lineMatching((l) => {
    const r = record(l);
    return r?.msg === 'listening' && r.child === victimIndex && r.pid !== victim;
  }, 30_000, `child ${victimIndex} listening again`));
  pids = pids.map((pid, i) => (i === victimIndex ? again?.pid as number : pid));
  const afterRestart = await next('the child started again');
  t.equal(afterRestart.value(REQUESTS, HEALTHZ), beforeKill.value(REQUESTS, HEALTHZ), 'the dead child\'s answers still counted');
  t.equal(afterRestart.value('license_child_restarts_total', { child: String(victimIndex) })
    - beforeKill.value('license_child_restarts_total', { child: String(victimIndex) }), 1, 'one restart of that child');
  t.not(afterRestart.value('process_start_time_seconds', { child: String(victimIndex) }),
    beforeKill.value('process_start_time_seconds', { child: String(victimIndex) }), 'its process_ figures are the new process\'s');

  const second = await oneRequestPerConnection(port, pids, Array(40).fill({ method: 'GET', path: '/healthz' }));
  t.ok(second.some((a) => a.pid === again?.pid), 'the restarted child answered some');
  t.equal(new Set(second.map((a) => a.pid)).size, children, 'the 40 connections reached every child');
  const last = await next('after 40 more');
  t.equal(last.value(REQUESTS, HEALTHZ) - beforeKill.value(REQUESTS, HEALTHZ), 40, 'the 40 added to what was counted before the kill');
  t.ok(last.find('license_child_up').every((s) => s.value === 1), 'every child answers again');
  t.ok(scrapes.length >= 7, `${scrapes.length} scrapes, none went back`);
});

// one process on purpose: what WORKERS=1 leaves unchanged is the subject
t.test('WORKERS=1: the process answers for itself, as before', async (t) => {
  const h = await startHarness(t, 'metricsone', { ...NO_RATE_LIMITS, WORKERS: '1' });
  const before = await scrape(h);
  for (let i = 0; i < 5; i++) t.equal((await h.request('GET', '/healthz')).status, 200);
  const after = await scrape(h);
  t.equal(after.value(REQUESTS, HEALTHZ) - before.value(REQUESTS, HEALTHZ), 5, 'its answers counted');
  t.same(after.series.filter((s) => 'child' in s.labels).map((s) => s.name), [], 'no child label');
  t.same(after.find('license_child_up'), [], 'no license_child_ series: there is no primary');
  t.equal(after.find('nodejs_heap_size_used_bytes').length, 1, 'Node\'s figures of the one process');
  t.equal(after.find('license_usage_backlog_events').length, 1);
  const linted = await promtool(after.text);
  t.same(linted.problems.filter((p) => !EXPLAINED.has(p)), [], 'promtool: nothing unexplained');
});
