import { startAsDeployed } from './asDeployed.js';
import { treeMicros, cpuMicros } from './proc.js';
import { median } from './table.js';
import { runWrk, type WrkResult } from './wrk.js';

// make bench-sign: what the receipt costs. POST /api/Signature/sign redeems as validate does
// and then signs a receipt (one Ed25519 signature over the documents' names and digests).
// Validate and sign with 1 and with 10 documents, closed loop, every request a fresh sign
// token, in rounds of one run whose order turns each round (the machine's drift shows in
// all three). The service runs as deployed at its defaults (npm start: a process per core
// of its CPU set, the usage worker inside, every limit on; the tokens come from many
// licenses, each under validate's 100 a minute). Pinning (2 cores): the service on
// BENCH_SERVER_CPU (0), Redis and wrk on BENCH_LOAD_CPU (1). BENCH_BASELINE=<the build
// before's dist>: that build deployed beside this one (the same CPUs, Redis and Postgres),
// each round measuring both, the builds' order turning too, and the ratios given per round;
// the two usage workers share the streams, as two instances' do, whichever is measured.
const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const SECONDS = Number(process.env.SIGN_BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.SIGN_BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.SIGN_BENCH_CONNECTIONS ?? 64);
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const NAMESPACE = 'benchsign';
const REDIS_PORT = 6396;
const PORTS = { service: 9140, helper: 9141, baseline: 9144 };
const BASELINE = process.env.BENCH_BASELINE;

interface Mode { label: string; path: string; args: string[] }
const MODES: Mode[] = [
  { label: 'validate', path: '/api/license/validate', args: [] },
  { label: 'sign, 1 document', path: '/api/Signature/sign', args: ['documents:1'] },
  { label: 'sign, 10 documents', path: '/api/Signature/sign', args: ['documents:10'] },
];

type Build = 'this build' | 'before';
interface Run { build: Build; round: number; mode: Mode; wrk: WrkResult; serviceUs: number; redisUs: number }

async function main(): Promise<void> {
  const deployed = await startAsDeployed({
    namespace: NAMESPACE, redisPort: REDIS_PORT, servicePort: PORTS.service, helperPort: PORTS.helper,
    serverCpu: SERVER_CPU, loadCpu: LOAD_CPU, helperCpu: `${SERVER_CPU},${LOAD_CPU}`, databaseUrl: DATABASE_URL,
    licenses: Number(process.env.SIGN_BENCH_LICENSES ?? 4000), mintSeconds: SECONDS,
    ...(BASELINE === undefined ? {} : { baseline: { root: BASELINE, port: PORTS.baseline } }),
  });
  const { service, redis, pool, drained, baseline } = deployed;
  const builds: [Build, typeof service][] = baseline === null ? [['this build', service]] : [['this build', service], ['before', baseline]];
  process.stderr.write(`bench-sign: service as deployed on cpu ${SERVER_CPU}; Redis and wrk (${CONNECTIONS} connections) on cpu ${LOAD_CPU}; ` +
    `${ROUNDS} rounds of ${SECONDS} s runs\n`);
  const runs: Run[] = [];
  // unmeasured validate runs first (the fastest of the three): how many tokens a run needs,
  // doubled until a run does not run out of them
  let expected = 20_000;
  for (let tries = 0; tries < 4; tries++) {
    const sizing = await runWrk({
      cpu: LOAD_CPU, url: `http://127.0.0.1:${service.port}/api/license/validate`, script: 'redeem.lua', connections: CONNECTIONS,
      seconds: SECONDS, args: [await pool.tokens(expected), '1'],
    });
    pool.ended();
    const ranOut = sizing.statusErrors > 0;
    expected = ranOut ? expected * 2 : Math.ceil(sizing.requests * 1.3);
    if (!ranOut) break;
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = MODES.map((_, i) => MODES[(i + round) % MODES.length] as Mode);
    for (const [build, target] of round % 2 === 0 ? builds : [...builds].reverse()) {
      for (const mode of order) {
        const tokens = await pool.tokens(expected);
        await drained();
        const before = { service: treeMicros(target.pid), redis: cpuMicros(redis.pid) };
        const wrk = await runWrk({
          cpu: LOAD_CPU, url: `http://127.0.0.1:${target.port}${mode.path}`, script: 'redeem.lua', connections: CONNECTIONS,
          seconds: SECONDS, args: [tokens, '1', ...mode.args],
        });
        const run: Run = {
          build, round, mode, wrk,
          serviceUs: (treeMicros(target.pid) - before.service) / wrk.requests, redisUs: (cpuMicros(redis.pid) - before.redis) / wrk.requests,
        };
        pool.ended();
        expected = Math.max(expected, Math.ceil(wrk.requests * 1.3));
        runs.push(run);
        process.stderr.write(`  round ${round + 1}, ${build}, ${mode.label}: ${Math.round(wrk.rps)}/s p99 ${(wrk.p99 / 1000).toFixed(2)} ms ` +
          `service ${run.serviceUs.toFixed(1)} µs/req non-200 ${wrk.statusErrors + wrk.socketErrors}\n`);
      }
    }
  }
  await drained();
  process.stdout.write(report(runs));
  await deployed.stop();
  process.exit(0);
}

function report(runs: Run[]): string {
  const out = [
    `Validate and sign as deployed (bench/load/sign.ts): npm start's defaults under taskset -c ${SERVER_CPU}, closed loop at ` +
    `${CONNECTIONS} connections, fresh sign tokens, ${ROUNDS} rounds of ${SECONDS} s, the order turning each round; Redis and wrk on ` +
    `cpu ${LOAD_CPU}. Medians over the rounds; server µs/req: CPU of every service process ÷ requests.` +
    (BASELINE === undefined ? '' : ` "before": ${BASELINE}, deployed beside this build, both measured each round, the builds' order turning.`),
    '',
    '| build | request | req/s | ÷ validate (per round: median) | p50 ms | p99 ms | service µs/req | Redis µs/req | non-200 |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  const builds = [...new Set(runs.map((r) => r.build))];
  const of = (build: Build, mode: Mode) => runs.filter((r) => r.build === build && r.mode === mode);
  /** per round, this mode's req/s over validate's of the same build and round */
  const perRound = (build: Build, mode: Mode) => of(build, mode).map((r) => {
    const validate = runs.find((v) => v.build === build && v.round === r.round && v.mode === MODES[0]);
    return r.wrk.rps / (validate?.wrk.rps ?? Number.NaN);
  });
  for (const build of builds) {
    for (const mode of MODES) {
      const rs = of(build, mode);
      const ratios = perRound(build, mode);
      out.push(`| ${build} | ${mode.label} | ${Math.round(median(rs.map((r) => r.wrk.rps)))} | ${median(ratios).toFixed(2)}× ` +
        `(${ratios.map((x) => x.toFixed(2)).join(', ')}) | ${(median(rs.map((r) => r.wrk.p50)) / 1000).toFixed(2)} | ` +
        `${(median(rs.map((r) => r.wrk.p99)) / 1000).toFixed(2)} | ${median(rs.map((r) => r.serviceUs)).toFixed(1)} | ` +
        `${median(rs.map((r) => r.redisUs)).toFixed(1)} | ${rs.reduce((n, r) => n + r.wrk.statusErrors + r.wrk.socketErrors, 0)} |`);
    }
  }
  if (builds.length === 2) {
    out.push('', '| this build ÷ before, per round | median | rounds |', '|---|---|---|');
    for (const mode of MODES) {
      const mine = of('this build', mode);
      const ratios = mine.map((r) => r.wrk.rps / (of('before', mode).find((b) => b.round === r.round)?.wrk.rps ?? Number.NaN));
      out.push(`| ${mode.label}, req/s | ${median(ratios).toFixed(2)}× | ${ratios.map((x) => x.toFixed(2)).join(', ')} |`);
    }
  }
  return out.join('\n') + '\n';
}

main().catch((err: Error) => {
  process.stderr.write(`bench-sign: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
