import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

// Runs wrk pinned to the load core with one of the scripts beside this file (the sources
// in bench/load, also when this module runs from a build folder).
export const luaDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../bench/load');

export interface WrkResult {
  requests: number;
  durationUs: number;
  statusErrors: number;
  socketErrors: number;
  p50: number;
  p99: number;
  p999: number;
  rps: number;
  /** wrk's own CPU per request, µs (scripts that measure it; else NaN) */
  wrkUs: number;
  /** replies by HTTP status (scripts that count them: common.lua's count_statuses; else null) */
  statuses: Record<string, number> | null;
}

export function runWrk(opts: {
  cpu: string; url: string; script: string; connections: number; seconds: number; args?: string[];
}): Promise<WrkResult> {
  const argv = ['-c', opts.cpu, 'wrk', '-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--timeout', '10s',
    '-s', path.join(luaDir, opts.script), opts.url];
  if (opts.args?.length) argv.push('--', ...opts.args);
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', argv, { env: { ...process.env, WRK_LUA_DIR: luaDir } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('WRK '));
      if (code !== 0 || !line) {
        reject(new Error(`wrk failed (${code}): ${out.slice(-500)}`));
        return;
      }
      const r = JSON.parse(line.slice(4)) as Record<string, number>;
      const statusLine = out.split('\n').find((l) => l.startsWith('STATUS '));
      resolve({
        requests: r.requests as number, durationUs: r.duration_us as number, statusErrors: r.status_errors as number,
        socketErrors: r.socket_errors as number, p50: r.p50 as number, p99: r.p99 as number, p999: r.p999 as number,
        rps: (r.requests as number) / ((r.duration_us as number) / 1e6),
        wrkUs: (r.cpu_us ?? -1) < 0 ? NaN : (r.cpu_us as number) / (r.requests as number),
        statuses: statusLine === undefined ? null : (JSON.parse(statusLine.slice(7)) as { statuses: Record<string, number> }).statuses,
      });
    });
  });
}
