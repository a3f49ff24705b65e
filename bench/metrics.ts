import { RequestMeter } from '../src/metrics/http.js';
import { Metrics } from '../src/metrics/registry.js';

// What recording costs one validate, on its own: the HTTP layer's clock read, count and
// latency observation, and the outcome's count, as src/http/server.ts, src/http/answer.ts and
// src/routes/license_validate.ts make them, with metrics on and off. CPU time of this
// process (process.cpuUsage), so other processes on a shared machine matter less than to
// the A/B of make bench (bench/README.md, Metrics). `node dist/bench/metrics.js`.
const CALLS = Number(process.env.METRICS_BENCH_CALLS ?? 5_000_000);
const ROUNDS = 5;
const STATUSES = ['200 OK', '400 Bad Request', '401 Unauthorized'];

function perCall(metrics: Metrics): number {
  const meter = new RequestMeter(metrics, 'post', '/api/license/validate');
  const outcome = metrics.validateOutcomes.series({ outcome: 'redeemed' });
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    const startedAt = metrics.now();
    outcome.inc();
    meter.answered(STATUSES[i & 1 ? 0 : i % 3] as string, startedAt);
  }
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / CALLS;
}

const runs: Record<'on' | 'off', number[]> = { on: [], off: [] };
for (let r = 0; r < ROUNDS; r++) {
  runs.off.push(perCall(new Metrics(false)));
  runs.on.push(perCall(new Metrics(true)));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
for (const mode of ['off', 'on'] as const) {
  process.stdout.write(`METRICS=${mode === 'on' ? 1 : 0}: ${median(runs[mode]).toFixed(1)} ns per request (median of ${ROUNDS} rounds of ` +
    `${CALLS} calls; rounds ${runs[mode].map((x) => x.toFixed(1)).join(', ')})\n`);
}
process.stdout.write(`recording costs ${(median(runs.on) - median(runs.off)).toFixed(1)} ns of CPU per request\n`);
const metrics = new Metrics(true);
new RequestMeter(metrics, 'post', '/api/license/validate').answered('200 OK', metrics.now());
const before = process.cpuUsage();
for (let i = 0; i < 100; i++) await metrics.scrape();
const scrape = process.cpuUsage(before);
process.stdout.write(`a scrape (this process's registry, no Redis read): ${((scrape.user + scrape.system) / 100 / 1000).toFixed(2)} ms of CPU\n`);
