import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { library } from '../src/redis/library.js';
import { median } from './load/table.js';

// make bench-script: what Redis spends on one call of the redemption script around its
// tokens: the script's set-up (its includes' functions), the deadline, the failover fence
// (this build: a GET of the slot's stamp against the run id the library keeps) and the
// epoch read, with an empty batch. BENCH_BASELINE=<the build before's dist>: that build's
// redeem.lua, called as it calls it (EVALSHA), in the same rounds, the order turning each
// round. Redis's own time per call (INFO commandstats usec_per_call) on a private
// redis-server pinned to BENCH_REDIS_CPU (default 1), no persistence; the client keeps 64
// calls in flight. A wall-clock figure: compare within a run, not across machines. Then
// check-quota's hit, sent whole and answered "unchanged" (checkQuotaHits).

const BASELINE = process.env.BENCH_BASELINE;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CALLS = Number(process.env.BENCH_CALLS ?? 50_000);
const REDIS_CPU = process.env.BENCH_REDIS_CPU ?? '1';
const PORT = 6457;
const IN_FLIGHT = 64;

interface Variant {
  label: string;
  command: string;
  /** one call's arguments: an empty batch, its deadline far ahead */
  args(deadline: number): (string | number)[];
}

/** CALLS calls of `call`, IN_FLIGHT at a time. */
async function callsInFlight(call: () => Promise<unknown>): Promise<void> {
  let sent = 0;
  const lane = async () => {
    while (sent < CALLS) {
      sent++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
}

/**
 * check-quota's hit, its answer sent whole (a process that does not hold it) against the
 * word "unchanged" (one that does): Redis's CPU per call (INFO cpu, which counts writing
 * the reply, unlike commandstats), the answer the size of a real one with a Turkish name.
 */
async function checkQuotaHits(fn: string, runId: string): Promise<string[]> {
  const key = '{k:0e5b6d9c-3d8b-4f52-9a8e-7d0f3b8a2c11}';
  const tag = `7.1795980804261540.${runId.slice(0, 8)}`;
  const head = '{"success":true,"data":{"licenseKey":"0e5b6d9c-3d8b-4f52-9a8e-7d0f3b8a2c11","remainingQuota":9876,' +
    '"totalQuota":10000,"usedQuota":124,"quotaPercentage":1.24,"expiryDate":"2027-11-29T00:00:00.000Z","isActive":true,' +
    '"organizationName":"Örnek Eczanesi Sağlık Hizmetleri A.Ş."},"message":"Kota bilgisi başarıyla getirildi","timestamp":"';
  await redis.hset(`${key}:c`, 'v', '7', 'n', runId);
  await redis.hset(`${key}:qa`, 'v', '7', 's', '200 OK', 'b', head, 'n', runId, 't', tag);
  const cpu = async () => {
    const info = await redis.info('cpu');
    return Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]);
  };
  const variants = [['the answer whole', ''], ['"unchanged" (the caller holds it)', tag]] as const;
  const perCall = new Map<string, number[]>(variants.map(([label]) => [label, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [label, held] of round % 2 === 0 ? variants : [...variants].reverse()) {
      const before = await cpu();
      await callsInFlight(() => redis.call('fcall', fn, 3, `${key}:rq:127.0.0.1`, `${key}:c`, `${key}:qa`, 0, 60_000, '1', held));
      perCall.get(label)?.push(((await cpu()) - before) * 1e6 / CALLS);
    }
  }
  const [whole, told] = variants.map(([label]) => perCall.get(label) ?? []) as [number[], number[]];
  return [
    `check-quota's hit (checkQuota.lua, limit off), Redis CPU per call (INFO cpu: user + sys), same rounds and calls:`,
    '',
    '| the answer | µs per call (median) | rounds |',
    '|---|---|---|',
    ...variants.map(([label]) => {
      const xs = perCall.get(label) ?? [];
      return `| ${label} | ${median(xs).toFixed(2)} | ${xs.map((x) => x.toFixed(2)).join(', ')} |`;
    }),
    '',
    `"unchanged" ÷ whole, per round: median ${median(told.map((x, i) => x / (whole[i] as number))).toFixed(2)}`,
  ];
}

const dir = mkdtempSync(path.join(tmpdir(), 'bench-script-'));
const server = spawn('taskset', ['-c', REDIS_CPU, 'redis-server', '--port', String(PORT), '--bind', '127.0.0.1', '--save', '',
  '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
const redis = new Redis({ port: PORT, host: '127.0.0.1', retryStrategy: (n) => (n > 50 ? null : 100) });
try {
  await redis.ping();
  const runId = /run_id:(\w+)/.exec(await redis.info('server'))?.[1] ?? '';
  await redis.set('{0}:node', runId); // this build's fence passes: the slot is stamped with this process

  const { source, functions } = library();
  await redis.call('FUNCTION', 'LOAD', source);
  const variants: Variant[] = [
    { label: 'this build (FCALL)', command: 'fcall', args: (d) => [functions.redeem, 3, '{0}:ev', '{0}:epoch', '{0}:node', 0, 0, d] },
  ];
  if (BASELINE) {
    // a build from before the scripts module was split holds scriptSource in its scripts.js
    const moved = path.resolve(BASELINE, 'src/redis/scriptSource.js');
    const before = await import(existsSync(moved) ? moved : path.resolve(BASELINE, 'src/redis/scripts.js')) as { scriptSource(name: string): string };
    const sha = await redis.script('LOAD', before.scriptSource('redeem')) as string;
    variants.unshift({ label: `before (EVALSHA, ${BASELINE})`, command: 'evalsha', args: (d) => [sha, 2, '{0}:ev', '{0}:epoch', 0, 0, d] });
  }

  const perCall = new Map<string, number[]>(variants.map((v) => [v.label, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
      const args = v.args(Date.now() + 3_600_000);
      await redis.config('RESETSTAT');
      await callsInFlight(() => redis.call(v.command, ...args));
      const stat = new RegExp(`^cmdstat_${v.command}:calls=(\\d+),usec=\\d+,usec_per_call=([\\d.]+)`, 'm').exec(await redis.info('commandstats'));
      perCall.get(v.label)?.push(Number(stat?.[2]));
    }
  }

  const lines = [
    `Redis time per call of redeem.lua with an empty batch (INFO commandstats usec_per_call), ${ROUNDS} rounds of ${CALLS} calls, ` +
    `64 in flight, redis-server on cpu ${REDIS_CPU}, no persistence:`,
    '',
    '| build | µs per call (median) | rounds |',
    '|---|---|---|',
    ...variants.map((v) => {
      const xs = perCall.get(v.label) ?? [];
      return `| ${v.label} | ${median(xs).toFixed(2)} | ${xs.map((x) => x.toFixed(2)).join(', ')} |`;
    }),
  ];
  if (variants.length === 2) {
    const [b, a] = variants.map((v) => perCall.get(v.label) ?? []) as [number[], number[]];
    const ratios = a.map((x, i) => x / (b[i] as number));
    lines.push('', `this build ÷ before, per round: median ${median(ratios).toFixed(2)}, range ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`);
  }
  lines.push('', ...await checkQuotaHits(functions.checkQuota, runId));
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  redis.disconnect();
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
