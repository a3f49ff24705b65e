import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { startNginx, type RunningNginx } from '../../test/helpers/nginxFront.js';
import { startAsDeployed, type AsDeployed } from './asDeployed.js';
import { cpuMicros, treeMicros } from './proc.js';
import { median } from './table.js';
import { runWrk, type WrkResult } from './wrk.js';

// make bench-front: validate (every request a fresh sign token, redeem.lua) straight to the
// service and through the nginx front of deploy/nginx, in one run: rounds of one run per
// path, the order turning each round, so the machine's drift shows in every path alike.
// The service runs as deployed behind a proxy (npm start's defaults, TRUST_PROXY=1,
// ALLOW_HTTP=1, every limit at its default), nginx as test/helpers/nginxFront.ts starts it
// (the shipped config, only ports, certificate and upstream port replaced). Paths:
//   direct - wrk to the service, plain HTTP;
//   https  - wrk to nginx over TLS (keep-alive: handshakes only when a connection opens);
//   http   - wrk to nginx in plain HTTP, on a listen added to the HTTPS server for the
//            bench only (same locations, no TLS): https ÷ http is TLS's own cost.
// Pinning (2 cores): the service and nginx share BENCH_SERVER_CPU (0), as they share a
// machine in production, so the front's work comes out of the server's core; wrk and Redis
// on BENCH_LOAD_CPU (1) whichever path is measured. BENCH_FRONT_CPU puts nginx elsewhere.
// BENCH_BASELINE=<the build before's dist folder>: that build is measured in the same rounds,
// as deployed on a Redis and schema of its own, behind the nginx front of its own checkout
// (its test/helpers/nginxFront.js, its deploy/nginx), and the report gives this build ÷ the
// build before per round and path.
const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const FRONT_CPU = process.env.BENCH_FRONT_CPU ?? SERVER_CPU;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_RUNS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_FRONT_CONNECTIONS ?? 64);
const PATHS = (process.env.BENCH_FRONT_PATHS ?? 'direct,https,http').split(',') as FrontPath[];
/** licenses made up front: a run at R req/s for S s needs R × S / 100 of them (validate's default limit per company) */
const LICENSES = Number(process.env.BENCH_FRONT_LICENSES ?? 3000);
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_PORT = 6396;
const PORTS = { service: 9140, helper: 9141 };
const WARMUP_SECONDS = 2;
const BASELINE = process.env.BENCH_BASELINE;
const BEFORE_PORTS = { redis: 6397, service: 9142, helper: 9143 };
/** a run that outran its tokens (the machine sped up) is measured again, this many times in all at most */
const MEASURE_ATTEMPTS = 3;

type FrontPath = 'direct' | 'https' | 'http';
const LABELS: Record<FrontPath, string> = {
  direct: 'direct (HTTP to the service)', https: 'through nginx, HTTPS', http: 'through nginx, plain HTTP',
};

type Build = 'this build' | 'build before';

interface Sample {
  build: Build;
  round: number;
  path: FrontPath;
  rps: number;
  p50: number;
  p99: number;
  /** CPU per request, µs: every service process, nginx (master and worker), Redis, wrk */
  serviceUs: number;
  nginxUs: number;
  redisUs: number;
  wrkUs: number;
  non200: number;
  /** requests beyond the tokens minted (refused as used: the run's req/s is then too high) */
  short: number;
}

/** 200s a second (a run that outran its tokens also answers the repeats, faster) */
const answered = (r: WrkResult) => (r.requests - r.statusErrors - r.socketErrors) / (r.durationUs / 1e6);

/** One build as deployed behind its front. */
interface Deployment {
  build: Build;
  deployed: AsDeployed;
  front: RunningNginx;
  /** tokens for a run: 1.5 × the fastest rate seen (0 at first: the pool's first guess) */
  fastest: number;
}

function urlOf(path: FrontPath, servicePort: number, front: RunningNginx): string {
  if (path === 'direct') return `http://127.0.0.1:${servicePort}`;
  if (path === 'https') return `https://127.0.0.1:${front.tlsPort}`;
  return `http://127.0.0.1:${front.plainApiPort}`;
}

async function main(): Promise<void> {
  for (const p of PATHS) if (!(p in LABELS)) throw new Error(`BENCH_FRONT_PATHS: unknown path ${p} (direct, https, http)`);
  const deployments: Deployment[] = [await deploy('this build', { redis: REDIS_PORT, ...PORTS }, undefined)];
  if (BASELINE !== undefined) deployments.unshift(await deploy('build before', BEFORE_PORTS, BASELINE));
  process.stderr.write(`bench-front: service (as deployed, TRUST_PROXY=1) on cpu ${SERVER_CPU}, nginx on cpu ${FRONT_CPU}, ` +
    `wrk + Redis on cpu ${LOAD_CPU}; ${CONNECTIONS} connections, ${SECONDS} s runs, ${ROUNDS} rounds of ${PATHS.join('/')}` +
    `${BASELINE === undefined ? '' : `, this build and the build before (${BASELINE}) in turn`}\n`);

  const tokensFor = (d: Deployment, seconds: number) => d.deployed.pool.tokens(Math.ceil(1.5 * d.fastest * seconds));
  const validate = (d: Deployment, path: FrontPath, tokens: string, seconds: number) => runWrk({
    cpu: LOAD_CPU, url: `${urlOf(path, d.deployed.service.port, d.front)}/api/license/validate`, script: 'redeem.lua',
    connections: CONNECTIONS, seconds, args: [tokens, '1'],
  });

  // every path warmed up once (nginx's upstream connections opened, the service's code hot)
  for (const d of deployments) {
    for (const path of PATHS) {
      const tokens = await tokensFor(d, WARMUP_SECONDS);
      await d.deployed.drained();
      const warm = await validate(d, path, tokens, WARMUP_SECONDS);
      d.fastest = Math.max(d.fastest, answered(warm));
      await d.deployed.drained();
      d.deployed.pool.ended();
    }
  }

  /** One measured run; a run that outran its tokens is measured again (the rate it showed sizes the next mint). */
  const measure = async (d: Deployment, round: number, path: FrontPath, attempt = 1): Promise<Sample> => {
    const { service, redis, pool, drained } = d.deployed;
    const tokens = await tokensFor(d, SECONDS);
    await drained();
    const before = { service: treeMicros(service.pid), nginx: treeMicros(d.front.pid), redis: cpuMicros(redis.pid) };
    const r = await validate(d, path, tokens, SECONDS);
    await drained(); // the usage worker's writes belong to the run's redemptions
    const minted = readFileSync(tokens, 'utf8').split('\n').filter(Boolean).length;
    const sample: Sample = {
      build: d.build, round, path, rps: r.rps, p50: r.p50, p99: r.p99,
      serviceUs: (treeMicros(service.pid) - before.service) / r.requests, nginxUs: (treeMicros(d.front.pid) - before.nginx) / r.requests,
      redisUs: (cpuMicros(redis.pid) - before.redis) / r.requests, wrkUs: r.wrkUs,
      non200: r.statusErrors + r.socketErrors, short: Math.max(0, r.requests - minted),
    };
    pool.ended();
    d.fastest = Math.max(d.fastest, answered(r));
    process.stderr.write(`  round ${round + 1} ${d.build.padEnd(12)} ${path.padEnd(6)} ${Math.round(r.rps)} req/s p50 ${(r.p50 / 1000).toFixed(2)} ms ` +
      `p99 ${(r.p99 / 1000).toFixed(2)} ms service ${sample.serviceUs.toFixed(1)} us nginx ${sample.nginxUs.toFixed(1)} us ` +
      `non-200 ${sample.non200}${sample.short ? ` RAN OUT OF TOKENS by ${sample.short}` : ''}\n`);
    if (sample.short > 0 && attempt < MEASURE_ATTEMPTS) return measure(d, round, path, attempt + 1);
    return sample;
  };
  // each round every (build, path) once, the order turning each round
  const turns = deployments.flatMap((d) => PATHS.map((path) => [d, path] as const));
  const samples: Sample[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < turns.length; i++) {
      const [d, path] = turns[(i + round) % turns.length] as (typeof turns)[number];
      samples.push(await measure(d, round, path));
    }
  }
  const current = deployments.find((d) => d.build === 'this build') as Deployment;
  const front = current.front;
  const errors = front.errorLog().split('\n').filter((l) => /\[(error|crit|alert|emerg)\]/.test(l));
  process.stdout.write(report(samples.filter((x) => x.build === 'this build'), errors.length, current.deployed.pool.size));
  if (BASELINE !== undefined) process.stdout.write(buildsReport(samples));
  for (const d of deployments) {
    await d.front.stop();
    await d.deployed.stop();
  }
  process.exit(0);
}

/** One build as deployed (its own Redis, schema and helper) behind the nginx front of its checkout. */
async function deploy(build: Build, ports: { redis: number; service: number; helper: number }, root: string | undefined): Promise<Deployment> {
  const deployed = await startAsDeployed({
    namespace: build === 'this build' ? 'front' : 'front_before', redisPort: ports.redis, servicePort: ports.service, helperPort: ports.helper,
    serverCpu: SERVER_CPU, loadCpu: LOAD_CPU, helperCpu: `${SERVER_CPU},${LOAD_CPU}`, databaseUrl: DATABASE_URL,
    env: { TRUST_PROXY: '1' }, licenses: LICENSES, mintSeconds: SECONDS, root,
  });
  // the build before's front is its own checkout's deploy/nginx, started by its own helper
  const starter = root === undefined ? startNginx
    : ((await import(pathToFileURL(path.join(root, 'test/helpers/nginxFront.js')).href)) as { startNginx: typeof startNginx }).startNginx;
  const front = await starter(deployed.service.port, { cpu: FRONT_CPU, plainApi: true });
  process.on('exit', () => front.stopNow());
  return { build, deployed, front, fastest: 0 };
}

/** This build ÷ the build before, per round and path (the two runs of a round follow each other closely). */
function buildsReport(samples: Sample[]): string {
  const out = ['', `This build ÷ the build before (${BASELINE}), each behind its own checkout's front, per round: median (range).`, '',
    '| path | rounds | req/s: this ÷ before | p99: this ÷ before | service µs/req: this ÷ before | nginx µs/req: this ÷ before |', '|---|---|---|---|---|---|'];
  for (const path of PATHS) {
    const pairs = samples.filter((s) => s.build === 'this build' && s.path === path).flatMap((a) => {
      const b = samples.find((s) => s.build === 'build before' && s.path === path && s.round === a.round);
      return b ? [[a, b] as const] : [];
    });
    if (pairs.length === 0) continue;
    const cell = (f: (s: Sample) => number) => {
      const r = pairs.map(([a, b]) => f(a) / f(b));
      return `${median(r).toFixed(2)}× (${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)})`;
    };
    out.push(`| ${LABELS[path]} | ${pairs.length} | ${cell((s) => s.rps)} | ${cell((s) => s.p99)} | ${cell((s) => s.serviceUs)} | ` +
      `${path === 'direct' ? '–' : cell((s) => s.nginxUs)} |`);
  }
  return out.join('\n') + '\n';
}

function report(samples: Sample[], nginxErrors: number, licenses: number): string {
  const ms = (us: number) => (us / 1000).toFixed(2);
  const ratio = (v: number) => `${v.toFixed(2)}×`;
  const directOf = (round: number) => samples.find((s) => s.round === round && s.path === 'direct');
  const out = [
    `Validate straight to the service and through the nginx front (bench/load/front.ts): the service as deployed ` +
    `(npm start's defaults under taskset -c ${SERVER_CPU}: WORKERS unset, the usage worker inside writing to Postgres, metrics on, ` +
    `every limit at its default; TRUST_PROXY=1, ALLOW_HTTP=1), nginx (deploy/nginx/license-service.conf, one worker process) on cpu ${FRONT_CPU}, ` +
    `wrk + Redis on cpu ${LOAD_CPU}; ${CONNECTIONS} connections on every path, ${SECONDS} s runs after a ${WARMUP_SECONDS} s warm-up per path, ` +
    `tokens from ${licenses} licenses (at most 100 per license and run: validate's limit per company).`,
    '',
    '| round | path | req/s | ÷ direct (same round) | p50 ms | p99 ms | p99 ÷ direct | service µs/req | nginx µs/req | Redis µs/req | wrk µs/req | non-200 |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const s of samples) {
    const d = directOf(s.round);
    out.push(`| ${s.round + 1} | ${LABELS[s.path]} | ${Math.round(s.rps)} | ${d ? ratio(s.rps / d.rps) : '–'} | ${ms(s.p50)} | ${ms(s.p99)} | ` +
      `${d ? ratio(s.p99 / d.p99) : '–'} | ${s.serviceUs.toFixed(1)} | ${s.nginxUs.toFixed(1)} | ${s.redisUs.toFixed(1)} | ` +
      `${s.wrkUs.toFixed(1)} | ${s.non200}${s.short ? ` (ran out of tokens by ${s.short})` : ''} |`);
  }
  out.push('', '| path | runs | req/s (median) | ÷ direct: median of the rounds (range) | p50 ms (median) | p99 ms (median) | ' +
    'p99 ÷ direct: median (range) | service µs/req | nginx µs/req | non-200 (all runs) |', '|---|---|---|---|---|---|---|---|---|---|');
  for (const path of PATHS) {
    const g = samples.filter((s) => s.path === path);
    if (g.length === 0) continue;
    const m = (f: (s: Sample) => number) => median(g.map(f));
    const perRound = (f: (s: Sample) => number) => {
      const r = g.flatMap((s) => {
        const d = directOf(s.round);
        return d ? [f(s) / f(d)] : [];
      });
      return r.length === 0 ? '–' : `${ratio(median(r))} (${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)})`;
    };
    out.push(`| ${LABELS[path]} | ${g.length} | ${Math.round(m((s) => s.rps))} | ${path === 'direct' ? '1' : perRound((s) => s.rps)} | ` +
      `${ms(m((s) => s.p50))} | ${ms(m((s) => s.p99))} | ${path === 'direct' ? '1' : perRound((s) => s.p99)} | ` +
      `${m((s) => s.serviceUs).toFixed(1)} | ${m((s) => s.nginxUs).toFixed(1)} | ${g.reduce((a, s) => a + s.non200, 0)} |`);
  }
  const https = samples.filter((s) => s.path === 'https');
  const http = samples.filter((s) => s.path === 'http');
  if (https.length > 0 && http.length > 0) {
    const tls = median(https.map((s) => s.nginxUs)) - median(http.map((s) => s.nginxUs));
    out.push('', `TLS's own cost in nginx: ${tls.toFixed(1)} µs per request (nginx's CPU per request, HTTPS less plain HTTP, medians).`);
  }
  out.push(`nginx error log: ${nginxErrors} line(s) at level error or above.`);
  return out.join('\n') + '\n';
}

main().catch((err: Error) => {
  process.stderr.write(`bench-front failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
