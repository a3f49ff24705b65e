import { existsSync } from 'node:fs';
import path from 'node:path';
import { median, type Sample } from './table.js';
import { buildRoot, measureDeployments, type DeploymentSample, type DeploymentsRun, type Variant } from './workers.js';

// BENCH_BASELINE=<the build before's dist> (make bench; BENCH_ONLY=baseline: this alone):
// validate as deployed, the build before against this one, each started as `npm start`
// starts it with its defaults: WORKERS unset (one process per core it may use), the usage
// worker inside, metrics on, every limit at its default. The environment holds nothing but
// requiredEnv (services.ts) and PATH. Validate's limit per company stays at its default:
// the runs' tokens come from many licenses, each under its limit (licensePool.ts).

const BEFORE = 'before';
const AFTER = 'after';

/** The two builds' deployments, on one port in turn; `env`: requiredEnv of that port. */
export function buildVariants(baselineRoot: string, env: Record<string, string>): Variant[] {
  if (!existsSync(path.join(baselineRoot, 'src/cli/server.js'))) {
    throw new Error(`BENCH_BASELINE=${baselineRoot} holds no src/cli/server.js: give the build before's dist folder`);
  }
  const clean = { PATH: process.env.PATH, ...env };
  return [{ label: BEFORE, root: baselineRoot, env: clean }, { label: AFTER, root: buildRoot, env: clean }];
}

/** `pairs` pairs of runs (one deployment each), the build going first turning each pair. */
export function measureBuilds(run: DeploymentsRun, baselineRoot: string, env: Record<string, string>): Promise<DeploymentSample[]> {
  return measureDeployments(run, buildVariants(baselineRoot, env));
}

/**
 * The same for check-quota over the keys of `keyFile`. Its limit (10 a minute per key and
 * client address by default) would refuse all but a few hundred requests of one load
 * generator: it is lifted to 10^9, so the step still counts every request and refuses none.
 */
export function measureBuildsCheckQuota(run: Omit<DeploymentsRun, 'mint'>, keyFile: string, baselineRoot: string, env: Record<string, string>): Promise<DeploymentSample[]> {
  const none = () => Promise.reject(new Error('check-quota mints nothing'));
  return measureDeployments({ ...run, mint: none, checkQuotaKeys: keyFile }, buildVariants(baselineRoot, { ...env, RATE_CHECK_QUOTA_PER_MIN: '1000000000' }));
}

type Figure = (s: DeploymentSample) => number;
const FIGURES: [string, Figure, (v: number) => string][] = [
  ['req/s', (s) => s.rps, (v) => String(Math.round(v))],
  ['p50 ms', (s) => s.p50 / 1000, (v) => v.toFixed(2)],
  ['p99 ms', (s) => s.p99 / 1000, (v) => v.toFixed(2)],
  ['p99.9 ms', (s) => s.p999 / 1000, (v) => v.toFixed(2)],
  ['server µs/req (all processes)', (s) => s.serverUs, (v) => v.toFixed(1)],
  ['Redis µs/req', (s) => s.redisUs, (v) => v.toFixed(1)],
  ['Redis µs/req in script calls', (s) => s.scriptUs, (v) => v.toFixed(1)],
  ['Postgres µs/req', (s) => s.postgresUs, (v) => v.toFixed(1)],
  ['WAL bytes/req', (s) => s.walBytes, (v) => String(Math.round(v))],
  // what one validate costs the machine's two cores in all, wrk's share included
  ['all CPU µs/req', (s) => s.serverUs + s.redisUs + s.postgresUs + s.wrkUs, (v) => v.toFixed(1)],
];

/** after ÷ before of each pair (both runs of a pair follow each other: the machine's drift cancels). */
function pairRatios(samples: DeploymentSample[], f: Figure, rounds?: (round: number) => boolean): number[] {
  const out: number[] = [];
  for (const round of new Set(samples.map((s) => s.round))) {
    if (rounds && !rounds(round)) continue;
    const before = samples.find((s) => s.round === round && s.label === BEFORE);
    const after = samples.find((s) => s.round === round && s.label === AFTER);
    // a figure both builds leave at 0 (check-quota writes no WAL) has no ratio
    if (before && after && f(before) > 0) out.push(f(after) / f(before));
  }
  return out;
}

const geometricMean = (xs: number[]) => Math.exp(xs.reduce((sum, x) => sum + Math.log(x), 0) / xs.length);

/**
 * req/s after ÷ before weighing both orders alike: measureDeployments runs the build before
 * first in even rounds. A pair's first run is often the faster on this VM (turnsReport).
 */
function balancedLine(samples: DeploymentSample[]): string {
  const beforeFirst = pairRatios(samples, (s) => s.rps, (round) => round % 2 === 0);
  const afterFirst = pairRatios(samples, (s) => s.rps, (round) => round % 2 === 1);
  if (beforeFirst.length === 0 || afterFirst.length === 0) return '';
  const show = (xs: number[]) => `${geometricMean(xs).toFixed(3)} (${xs.length})`;
  return `req/s after ÷ before, geometric mean with the build before first ${show(beforeFirst)}, this build first ${show(afterFirst)}; ` +
    `balanced ${Math.sqrt(geometricMean(beforeFirst) * geometricMean(afterFirst)).toFixed(3)}`;
}

/** `licenses`: how many the runs' requests went to; `validateLimit`: validate's default limit (null: check-quota's runs) */
export function buildsReport(samples: DeploymentSample[], run: Pick<DeploymentsRun, 'connections' | 'serverCpus' | 'loadCpu' | 'seconds'> & {
  baselineRoot: string; licenses: number; validateLimit: number | null;
}): string {
  const of = (label: string) => samples.filter((s) => s.label === label);
  const limits = run.validateLimit === null
    ? `check-quota's limit lifted to 10^9 a minute (counted, never refusing), every other at its default; cached answers of ${run.licenses} licenses`
    : `validate limited to ${run.validateLimit} a minute per company, the load spread over ${run.licenses} licenses`;
  const out = [
    `${run.validateLimit === null ? 'check-quota' : 'Validate'} as deployed, the build before (${run.baselineRoot}) against this build (bench/load/baseline.ts): each as npm start runs it ` +
    `with its defaults (WORKERS unset: a process per core of cpus ${run.serverCpus}; usage worker inside, writing to Postgres; metrics on; ` +
    `${limits}); wrk + Redis on cpu ${run.loadCpu}, c=${run.connections}, ${run.seconds} s runs after a 2 s warm-up, one deployment per run. ` +
    'Redis without persistence (no AOF, no snapshots).',
    '',
    `| build | runs | ${FIGURES.map(([name]) => `${name} (median)`).join(' | ')} | wrk µs/req | non-200 (all runs) |`,
    `|---|---|${FIGURES.map(() => '---|').join('')}---|---|`,
  ];
  for (const label of [BEFORE, AFTER]) {
    const g = of(label);
    if (g.length === 0) continue;
    out.push(`| ${label} | ${g.length} | ${FIGURES.map(([, f, show]) => show(median(g.map(f)))).join(' | ')} | ${median(g.map((s) => s.wrkUs)).toFixed(1)} | ` +
      `${g.reduce((sum, s) => sum + s.non200, 0)} |`);
  }
  const pairs = pairRatios(samples, (s) => s.rps).length;
  out.push('', `| after ÷ before, per pair (${pairs} pairs) | median | range | pairs in order |`, '|---|---|---|---|');
  for (const [name, f] of FIGURES) {
    const r = pairRatios(samples, f);
    if (r.length === 0) continue;
    const fixed = (v: number) => v.toFixed(2);
    out.push(`| ${name} | ${fixed(median(r))} | ${fixed(Math.min(...r))}–${fixed(Math.max(...r))} | ${r.map(fixed).join(', ')} |`);
  }
  const balanced = balancedLine(samples);
  if (balanced !== '') out.push('', balanced);
  const short = samples.filter((s) => s.short > 0).length;
  if (short > 0) out.push('', `${short} run(s) RAN OUT OF TOKENS: their req/s count refusals too`);
  return out.join('\n') + '\n';
}

/**
 * `service <name>` ÷ `before: <name>` of BENCH_ONLY=others, pair by pair (the k-th run of
 * each), with the pairs split by which build went first: on this VM the first of a pair
 * ran 3-11 % faster at check-quota in six of nine runs (2026-11-29), so an odd number of
 * pairs leans toward the build that went first more often. The balanced figure weighs
 * both orders alike.
 */
export function turnsReport(samples: readonly Sample[], name: string): string {
  const mine = samples.filter((s) => s.name === `service ${name}`);
  const theirs = samples.filter((s) => s.name === `before: ${name}`);
  const pairs = mine.slice(0, theirs.length).map((s, k) => {
    const other = theirs[k] as Sample;
    return { ratio: s.rps / other.rps, first: samples.indexOf(s) < samples.indexOf(other) };
  });
  if (pairs.length === 0) return '';
  const first = pairs.filter((p) => p.first).map((p) => p.ratio);
  const second = pairs.filter((p) => !p.first).map((p) => p.ratio);
  const balanced = first.length > 0 && second.length > 0 ? Math.sqrt(geometricMean(first) * geometricMean(second)) : geometricMean(pairs.map((p) => p.ratio));
  const list = (xs: number[]) => `${xs.length > 0 ? geometricMean(xs).toFixed(3) : '-'} (${xs.length})`;
  return `${name} req/s, this build ÷ before, per pair: ${pairs.map((p) => p.ratio.toFixed(3)).join(', ')}; median ` +
    `${median(pairs.map((p) => p.ratio)).toFixed(3)}; geometric mean with this build first ${list(first)}, second ${list(second)}; ` +
    `balanced ${balanced.toFixed(3)}\n`;
}
