import type { ChartRow } from './chart.js';
import { sustainedRate, type DeployedMode, type DeployedSample, type SustainedProbe } from './deployed.js';
import { median, summarise, type Row, type Sample } from './table.js';

// The tables of validate as deployed: beside ceiling (c) and the request path alone of the
// same run, the sustained (open-loop) search, and the targets of the as-deployed runs.

const MODES: DeployedMode[] = ['worker inside', 'worker apart'];
/** the Idempotency-Key A/B (deployed.ts measureKeyed): one deployment, with and without a key */
const KEYED_MODES: DeployedMode[] = ['worker inside', 'worker inside, Idempotency-Key'];
/** the metrics A/B (deployed.ts measureMetrics): two deployments, METRICS=0 and METRICS=1 (npm start's default) */
const METRICS_MODES: DeployedMode[] = ['worker inside, METRICS=0', 'worker inside'];
/** the replica wait A/B (deployed.ts measureReplicaWait): REDIS_WAIT_REPLICAS=0 (the default) and 1, a replica attached for both */
const WAIT_MODES: DeployedMode[] = ['worker inside', 'worker inside, REDIS_WAIT_REPLICAS=1'];
const ms = (us: number) => (us / 1000).toFixed(2);

/** A mode's medians over its runs. */
type DeployedRow = Omit<DeployedSample, 'connections'> & { runs: number };

function deployedRows(samples: DeployedSample[], modes = MODES): DeployedRow[] {
  return modes.flatMap((mode) => {
    const g = samples.filter((s) => s.mode === mode);
    if (g.length === 0) return [];
    const m = (f: (s: DeployedSample) => number) => median(g.map(f));
    return [{
      mode, runs: g.length, rps: m((s) => s.rps), p99: m((s) => s.p99), p999: m((s) => s.p999), serverUs: m((s) => s.serverUs),
      workerUs: g[0]?.workerUs === null ? null : m((s) => s.workerUs ?? 0), redisUs: m((s) => s.redisUs),
      postgresUs: m((s) => s.postgresUs), walBytes: m((s) => s.walBytes), wrkUs: m((s) => s.wrkUs), backlog: m((s) => s.backlog), drainMs: m((s) => s.drainMs),
    }];
  });
}

export interface DeployedFigures {
  ceiling?: Row;
  alone?: Row;
  deployed: DeployedRow[];
  probes: SustainedProbe[];
  /** the Idempotency-Key A/B: without, then with */
  keyed: DeployedRow[];
  /** with ÷ without, req/s, of each pair of the A/B (its runs follow each other on one deployment) */
  keyedRatios: number[];
  /** the metrics A/B: off, then on */
  metrics: DeployedRow[];
  /** on ÷ off, req/s, of each pair of the metrics A/B */
  metricsRatios: number[];
  /** the replica wait A/B: REDIS_WAIT_REPLICAS=0, then 1 */
  wait: DeployedRow[];
  /** 1 ÷ 0, req/s, of each pair of the replica wait A/B */
  waitRatios: number[];
}

/** with ÷ without of each pair, the samples in the order measureKeyed (measureMetrics) took them (two a pair) */
function pairRatios(samples: DeployedSample[], without: DeployedMode): number[] {
  const out: number[] = [];
  for (let i = 0; i + 1 < samples.length; i += 2) {
    const [a, b] = [samples[i] as DeployedSample, samples[i + 1] as DeployedSample];
    const [plain, other] = a.mode === without ? [a, b] : [b, a];
    out.push(other.rps / plain.rps);
  }
  return out;
}

export function deployedFigures(
  samples: Sample[], deployed: DeployedSample[], probes: SustainedProbe[], connections: number, keyed: DeployedSample[],
  metered: DeployedSample[] = [], waited: DeployedSample[] = [],
): DeployedFigures {
  const all = summarise(samples);
  return {
    ceiling: all.find((r) => r.name === 'ceiling (c) +evalsha' && r.connections === connections),
    alone: all.find((r) => r.name === 'service validate' && r.connections === connections),
    deployed: deployedRows(deployed), probes, keyed: deployedRows(keyed, KEYED_MODES), keyedRatios: pairRatios(keyed, 'worker inside'),
    metrics: deployedRows(metered, METRICS_MODES), metricsRatios: pairRatios(metered, 'worker inside, METRICS=0'),
    wait: deployedRows(waited, WAIT_MODES), waitRatios: pairRatios(waited, 'worker inside'),
  };
}

/** The worker's CPU per redemption: its own process apart; inside, what the server spends beyond the request path alone. */
function workerUs(f: DeployedFigures, r: DeployedRow): number | null {
  if (r.workerUs !== null) return r.workerUs;
  return f.alone ? r.serverUs - f.alone.serverUs : null;
}

export function deployedReport(f: DeployedFigures, connections: number): string {
  const c = f.ceiling;
  const ratio = (v: number, base: number | undefined) => (base ? (v / base).toFixed(2) : '');
  const out: string[] = [
    `| validate, c=${connections} | runs | req/s (median) | ÷ ceiling (c) | p99 ms | p99 ÷ ceiling (c) | server µs | worker µs | Redis µs | Postgres µs | WAL bytes | wrk µs | backlog at end | drain ms |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  if (c) out.push(`| ceiling (c) +evalsha (persists nothing) | ${c.runs} | ${Math.round(c.rps)} | 1.00 | ${ms(c.p99)} | 1.00 | ${c.serverUs.toFixed(1)} | | ${c.redisUs.toFixed(1)} | | | | | |`);
  if (f.alone) {
    const a = f.alone;
    out.push(`| service, request path alone (worker stopped) | ${a.runs} | ${Math.round(a.rps)} | ${ratio(a.rps, c?.rps)} | ${ms(a.p99)} | ${ratio(a.p99, c?.p99)} | ` +
      `${a.serverUs.toFixed(1)} | | ${a.redisUs.toFixed(1)} | | | | | |`);
  }
  const labelled = (rows: DeployedRow[], ab: string) => rows.map((k) => ({ ...k, mode: `${k.mode} (${ab})` as DeployedMode }));
  for (const r of [...f.deployed, ...labelled(f.keyed, 'key A/B'), ...labelled(f.metrics, 'metrics A/B'), ...labelled(f.wait, 'replica wait A/B, a replica attached')]) {
    const w = workerUs(f, r);
    const worker = r.workerUs !== null ? r.workerUs.toFixed(1) : w === null ? '(in server)' : `(in server: ${w.toFixed(1)})`;
    out.push(`| service as deployed, ${r.mode} | ${r.runs} | ${Math.round(r.rps)} | ${ratio(r.rps, c?.rps)} | ${ms(r.p99)} | ${ratio(r.p99, c?.p99)} | ` +
      `${r.serverUs.toFixed(1)} | ${worker} | ${r.redisUs.toFixed(1)} | ${r.postgresUs.toFixed(1)} | ${Math.round(r.walBytes)} | ${r.wrkUs.toFixed(1)} | ${Math.round(r.backlog)} | ` +
      `${Number.isFinite(r.drainMs) ? Math.round(r.drainMs) : 'did not drain'} |`);
  }
  if (f.probes.length > 0) {
    out.push('', '| sustained (open loop) | offered req/s | answered req/s | p99 ms | most events waiting | drain ms | held |', '|---|---|---|---|---|---|---|');
    for (const p of f.probes) {
      out.push(`| ${p.mode} | ${Math.round(p.rate)} | ${Math.round(p.rps)} | ${ms(p.p99)} | ${p.maxBacklog} | ` +
        `${Number.isFinite(p.drainMs) ? Math.round(p.drainMs) : 'did not drain'} | ${p.held ? 'yes' : 'no'} |`);
    }
  }
  out.push('', '| target (same run) | measured | verdict |', '|---|---|---|');
  const target = (label: string, value: number | null | undefined, limit: number, atLeast: boolean) => {
    if (value === null || value === undefined || Number.isNaN(value)) return;
    const ok = atLeast ? value >= limit : value <= limit;
    out.push(`| ${label} ${atLeast ? '≥' : '≤'} ${limit} | ${value.toFixed(2)} | ${ok ? 'met' : `missed by ${(Math.abs(value - limit) / limit * 100).toFixed(0)}%`} |`);
  };
  // validate with an Idempotency-Key within 5 % of validate without, both as deployed
  // the median of the pairs' ratios: each pair's two runs follow each other, so drift of the shared machine cancels
  if (f.keyedRatios.length > 0) {
    target(`with an Idempotency-Key req/s ÷ without (key A/B, worker inside; median of ${f.keyedRatios.length} pairs: ` +
      `${f.keyedRatios.map((r) => r.toFixed(2)).join(', ')})`, median(f.keyedRatios), 0.95, true);
  }
  // metrics add no measurable cost to validate
  if (f.metricsRatios.length > 0) {
    target(`METRICS=1 (scraped every second) req/s ÷ METRICS=0 (metrics A/B, worker inside; median of ${f.metricsRatios.length} pairs: ` +
      `${f.metricsRatios.map((r) => r.toFixed(2)).join(', ')})`, median(f.metricsRatios), 0.95, true);
  }
  // the price of waiting for a replica: reported, no target (an opt-in that buys no lost 200 in a failover)
  if (f.waitRatios.length > 0) {
    out.push(`| REDIS_WAIT_REPLICAS=1 req/s ÷ 0 (replica wait A/B, worker inside; median of ${f.waitRatios.length} pairs: ` +
      `${f.waitRatios.map((r) => r.toFixed(2)).join(', ')}) | ${median(f.waitRatios).toFixed(2)} | reported |`);
  }
  for (const r of f.deployed) {
    if (c) target(`as deployed (${r.mode}) req/s ÷ ceiling (c)`, r.rps / c.rps, 0.95, true);
    if (c) target(`as deployed (${r.mode}) p99.9 ÷ ceiling (c)'s`, r.p999 / c.p999, 1.5, false);
    target(`Postgres CPU µs per redemption (${r.mode})`, r.postgresUs, 8, false);
    // the same target against the machine: CPU time a redemption moves with the machine's speed, its
    // share of what ceiling (c)'s server spends a request does not (8 µs where that server took 84: 0.095)
    if (c) target(`Postgres CPU µs per redemption ÷ ceiling (c)'s server µs per request (${r.mode})`, r.postgresUs / c.serverUs, 0.095, false);
    target(`worker CPU µs per redemption (${r.mode}${r.workerUs === null ? ', beyond the request path alone' : ''})`, workerUs(f, r), 5, false);
  }
  if (c && f.alone) target('request path alone req/s ÷ ceiling (c)', f.alone.rps / c.rps, 1.0, true);
  for (const mode of MODES) {
    if (c && f.probes.some((p) => p.mode === mode)) target(`sustained (${mode}) ÷ ceiling (c)`, sustainedRate(f.probes, mode) / c.rps, 0.7, true);
  }
  return out.join('\n') + '\n';
}

/** The chart's rows: every scenario of the main table, then the deployed modes and the sustained rates. */
export function chartRows(samples: Sample[], f: DeployedFigures): ChartRow[] {
  const rows: ChartRow[] = summarise(samples).map((r) => ({
    label: `${r.name}, c=${r.connections}`, rps: r.rps, p99: r.p99 / 1000, kind: r.name.startsWith('ceiling') ? 'ceiling' : 'service',
  }));
  for (const r of f.deployed) rows.push({ label: `validate as deployed, ${r.mode}, c=64`, rps: r.rps, p99: r.p99 / 1000, kind: 'deployed' });
  for (const mode of MODES) {
    const rate = sustainedRate(f.probes, mode);
    if (rate > 0) rows.push({ label: `validate sustained, ${mode}`, rps: rate, p99: null, kind: 'sustained' });
  }
  return rows;
}
