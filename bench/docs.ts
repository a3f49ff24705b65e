import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { connectPostgres } from '../src/db/pg.js';
import { ADMIN_TOKEN, requiredEnv, startPinned, startRedis, stopAll, type Pinned } from './load/services.js';
import { buildRoot, READY } from './load/workers.js';

// make bench-docs: Lighthouse's performance category on the documentation pages of the
// service as `npm start` runs it (WORKERS unset, its defaults, the admin API on), with
// Debian's chromium headless, for the default (mobile: simulated slow 4G and a 4x slower
// CPU) and the desktop presets, BENCH_RUNS runs each (the median run by score is printed
// with its metrics, and every run's score). DOCS_PATHS: the pages (comma-separated; default /docs).
// BENCH_BASELINE=<the build before's dist>: that build instead of this one.
// Lighthouse is pinned in .tools/lighthouse (make lighthouse-tools), not a dependency of
// the service.

const run = promisify(execFile);
const LIGHTHOUSE = path.resolve(buildRoot, '..', '.tools/lighthouse/node_modules/lighthouse/cli/index.js');
const CHROMIUM = '/usr/bin/chromium';
const NAMESPACE = 'bench_docs';
const REDIS_PORT = 6397;
const PORT = 8097;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PATHS = (process.env.DOCS_PATHS ?? '/docs').split(',').map((p) => p.trim()).filter(Boolean);
const root = process.env.BENCH_BASELINE ? path.resolve(process.env.BENCH_BASELINE) : buildRoot;
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The metrics printed, by Lighthouse audit id, and how each reads. */
const METRICS: [id: string, label: string, format: (v: number) => string][] = [
  ['first-contentful-paint', 'FCP', (v) => `${(v / 1000).toFixed(1)} s`],
  ['largest-contentful-paint', 'LCP', (v) => `${(v / 1000).toFixed(1)} s`],
  ['total-blocking-time', 'TBT', (v) => `${Math.round(v)} ms`],
  ['cumulative-layout-shift', 'CLS', (v) => v.toFixed(3)],
  ['speed-index', 'SI', (v) => `${(v / 1000).toFixed(1)} s`],
  ['total-byte-weight', 'bytes', (v) => `${Math.round(v / 1024)} KiB`],
];

interface Result {
  score: number;
  values: Record<string, number>;
}

interface Report {
  categories: { performance: { score: number } };
  audits: Record<string, { numericValue?: number }>;
}

async function lighthouse(url: string, preset: 'mobile' | 'desktop'): Promise<Result> {
  const flags = [
    LIGHTHOUSE, url, '--only-categories=performance', '--output=json', '--output-path=stdout', '--quiet',
    `--chrome-flags=--headless=new --disable-gpu${process.getuid?.() === 0 ? ' --no-sandbox' : ''}`,
    ...(preset === 'desktop' ? ['--preset=desktop'] : []),
  ];
  const { stdout } = await run(process.execPath, flags, { env: { ...process.env, CHROME_PATH: CHROMIUM }, maxBuffer: 64 << 20 });
  const report = JSON.parse(stdout) as Report;
  const values = Object.fromEntries(METRICS.map(([id]) => [id, report.audits[id]?.numericValue ?? Number.NaN]));
  return { score: Math.round(report.categories.performance.score * 100), values };
}

function line(preset: string, results: Result[]): string {
  const sorted = [...results].sort((a, b) => a.score - b.score);
  const mid = sorted[Math.floor((sorted.length - 1) / 2)] as Result;
  const metrics = METRICS.map(([id, label, format]) => `${label} ${format(mid.values[id] as number)}`).join(', ');
  return `  ${preset.padEnd(7)} performance ${mid.score} (runs: ${results.map((r) => r.score).join(', ')}): ${metrics}`;
}

async function main(): Promise<void> {
  if (!existsSync(LIGHTHOUSE)) throw new Error(`${LIGHTHOUSE} is missing: make lighthouse-tools installs it`);
  if (!existsSync(path.join(root, 'src/cli/server.js'))) throw new Error(`${root} holds no src/cli/server.js: give a build's dist folder`);
  const started: Pinned[] = [];
  process.on('exit', () => stopAll(started));
  const setup = await connectPostgres(databaseUrl, 'public', 1);
  await setup.unsafe(`drop schema if exists "${NAMESPACE}" cascade`);
  try {
    started.push(await startRedis('0-1', REDIS_PORT));
    const env = { PATH: process.env.PATH, ...requiredEnv(REDIS_PORT, databaseUrl, PORT), REDIS_PREFIX: NAMESPACE, PG_SCHEMA: NAMESPACE, ADMIN_TOKEN };
    started.push(await startPinned('service', '0-1', ['node', path.join(root, 'src/cli/server.js')], env, READY, PORT, false));
    console.log(`Lighthouse (.tools/lighthouse) with ${CHROMIUM} on the build in ${root}, ${RUNS} runs per preset`);
    for (const page of PATHS) {
      const url = `http://127.0.0.1:${PORT}${page}`;
      console.log(page);
      for (const preset of ['mobile', 'desktop'] as const) {
        const results: Result[] = [];
        for (let i = 0; i < RUNS; i++) results.push(await lighthouse(url, preset));
        console.log(line(preset, results));
      }
    }
  } finally {
    stopAll(started);
    await setup.unsafe(`drop schema if exists "${NAMESPACE}" cascade`);
    await setup.end();
  }
}

await main();
