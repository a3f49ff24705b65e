import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Teardown } from './harness.js';
import { until, waitFor } from './wait.js';

// Real processes: a private redis-server the test may break at will, a Redis Cluster, and
// the service's own programs as child processes (the server `node dist/src/cli/server.js`,
// as `npm start` runs it: WORKERS unset, so one process per core; the usage worker
// `node dist/src/cli/worker.js`), whose every stdout and stderr line is kept (spawnLogged).
// None outlives its test: each is SIGKILLed at teardown, or when the test's process exits.

const run = promisify(execFile);

/** The server of the same build as this helper (dist/test/helpers -> dist/src/cli). */
export const SERVER_SCRIPT = fileURLToPath(new URL('../../src/cli/server.js', import.meta.url));
/** The standalone usage worker of the same build. */
export const WORKER_SCRIPT = fileURLToPath(new URL('../../src/cli/worker.js', import.meta.url));

/** A loopback port that was free a moment ago (the kernel's pick). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
}

/** Resolves when the child has exited (at once if it already has), or after timeoutMs with timedOut. */
export function exitOf(child: ChildProcess, timeoutMs: number): Promise<ExitStatus> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode, timedOut: false });
      return;
    }
    const timer = setTimeout(() => resolve({ code: null, signal: null, timedOut: true }), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut: false });
    });
  });
}

/** Children of this test process still running: SIGKILLed if the test's process exits without its teardown (a crash). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** SIGKILLs a child this test started (by its own handle, never by name) and waits for its exit. */
async function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await exitOf(child, 5000);
}

export interface PrivateRedis {
  port: number;
  url: string;
  /** the folder the server keeps its files in (RDB, AOF) */
  dir: string;
  /** redis-cli against this server; resolves with its trimmed output */
  cli(...args: string[]): Promise<string>;
  /** sends a signal (SIGKILL, SIGTERM, SIGSTOP, SIGCONT) to this server's process; SIGKILL/SIGTERM wait for its exit */
  signal(sig: NodeJS.Signals): Promise<void>;
  /** starts the server again on the same port and folder (after a stop), with the same arguments plus `extraArgs` */
  restart(extraArgs?: string[]): Promise<void>;
}

/**
 * A redis-server of the test's own on a free loopback port, in a temporary folder, with no
 * persistence; killed and its folder removed at teardown. Break it as you like.
 */
export async function startPrivateRedis(t: Teardown, extraArgs: string[] = []): Promise<PrivateRedis> {
  const dir = await mkdtemp(path.join(tmpdir(), 'redis-private-'));
  let child: ChildProcess | null = null;
  t.teardown(async () => {
    if (child) await killChild(child);
    await rm(dir, { recursive: true, force: true });
  });
  const cli = async (port: number, args: string[]): Promise<string> => {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args]);
    return stdout.trim();
  };
  const launch = async (port: number, args: string[]): Promise<{ up: boolean; output: string[] }> => {
    const output: string[] = [];
    const started: ChildProcess = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no',
      '--daemonize', 'no', ...args,
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout?.on('data', (c: Buffer) => output.push(c.toString()));
    started.stderr?.on('data', (c: Buffer) => output.push(c.toString()));
    let up = false;
    await until(async () => {
      up = await cli(port, ['ping']).then((s) => s === 'PONG', () => false);
      return up || started.exitCode !== null;
    }, { timeoutMs: 10_000 });
    if (!up) await killChild(started);
    return { up, output };
  };
  for (let attempt = 0; ; attempt++) {
    const port = await freeLoopbackPort();
    const { up, output } = await launch(port, extraArgs);
    if (up) {
      return {
        port, dir, url: `redis://127.0.0.1:${port}`, cli: (...args) => cli(port, args),
        async signal(sig) {
          const target = child;
          if (!target || target.exitCode !== null || target.signalCode !== null) return;
          target.kill(sig);
          if (sig === 'SIGKILL' || sig === 'SIGTERM') await exitOf(target, 10_000);
        },
        async restart(more = []) {
          const again = await launch(port, [...extraArgs, ...more]);
          if (!again.up) throw new Error(`redis-server did not start again on ${port}: ${again.output.join('')}`);
        },
      };
    }
    // another process took the port between the pick and the bind: pick again
    if (attempt >= 4) throw new Error(`redis-server did not start: ${output.join('')}`);
  }
}

export interface LogLine {
  stream: 'stdout' | 'stderr';
  text: string;
  /** milliseconds since the process was spawned, when the line was read */
  at: number;
}

/** A line that is a JSON object (a pino record), parsed; null for any other line. */
export function recordOf(line: LogLine): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(line.text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed as Record<string, unknown> : null;
  } catch {
    return null; // not a JSON line
  }
}

/** The lines that are JSON objects (pino's records), parsed; the others skipped. */
export function jsonRecords(lines: LogLine[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of lines) {
    const record = recordOf(line);
    if (record !== null) out.push(record);
  }
  return out;
}

/** A child process whose every stdout and stderr line is kept (spawnLogged). */
export interface LoggedProcess {
  child: ChildProcess;
  /** every complete line the process wrote so far, both streams, in arrival order */
  lines: LogLine[];
  /** the lines parsed as JSON (pino's), skipping those that are not */
  records(): Record<string, unknown>[];
  /** the text one stream wrote so far, its lines joined */
  text(stream: 'stdout' | 'stderr'): string;
  /** resolves with the first line (already read or to come) that `match` accepts; rejects when the process exits first, or after timeoutMs */
  lineMatching(match: (line: LogLine) => boolean, timeoutMs: number, what: string): Promise<LogLine>;
  /** sends the signal and waits for the exit (and for both streams to be read to the end) */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitStatus>;
}

/** As a WORKERS value of spawnLogged's env: leave WORKERS unset, so the default (one per core) applies, as with `npm start` (the default anyway). */
export const DEFAULT_WORKERS = 'default';

/**
 * As a WORKERS value, for a test about several processes: DEFAULT_WORKERS (as `npm start`
 * runs) where the default gives several (one per core), 2 on a machine of one core.
 */
export const SEVERAL_WORKERS = availableParallelism() >= 2 ? DEFAULT_WORKERS : '2';

/** The environment of a spawned process: `env` plus PATH; WORKERS=DEFAULT_WORKERS leaves WORKERS unset. */
function processEnv(env: Record<string, string>): Record<string, string> {
  const full: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env };
  if (full.WORKERS === DEFAULT_WORKERS) delete full.WORKERS;
  return full;
}

/** How many server processes `env` makes `npm start` run (config's WORKERS: one per core unless given). */
export function serverProcessesOf(env: Record<string, string>): number {
  const given = env.WORKERS;
  return given === undefined || given === DEFAULT_WORKERS || given === '' ? availableParallelism() : Number(given);
}

/**
 * Runs `node <script>` with exactly `env` (plus PATH; WORKERS as given, else unset: one server process
 * per core, as `npm start`) and keeps every line it writes on stdout and stderr. The process is
 * SIGKILLed at teardown if it is still running.
 */
export function spawnLogged(t: Teardown, script: string, env: Record<string, string>): LoggedProcess {
  const born = Date.now();
  const child = spawn(process.execPath, [script], {
    env: processEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  t.teardown(() => killChild(child));
  const lines: LogLine[] = [];
  const listeners = new Set<(line: LogLine) => void>();
  const ended: Promise<void>[] = [];
  for (const stream of ['stdout', 'stderr'] as const) {
    const source = child[stream];
    if (!source) throw new Error(`no ${stream} pipe`);
    let rest = '';
    const push = (text: string) => {
      const line: LogLine = { stream, text, at: Date.now() - born };
      lines.push(line);
      for (const listener of listeners) listener(line);
    };
    source.setEncoding('utf8');
    source.on('data', (chunk: string) => {
      rest += chunk;
      let nl: number;
      while ((nl = rest.indexOf('\n')) >= 0) {
        push(rest.slice(0, nl));
        rest = rest.slice(nl + 1);
      }
    });
    ended.push(new Promise<void>((resolve) => {
      source.once('close', () => {
        if (rest !== '') push(rest);
        rest = '';
        resolve();
      });
    }));
  }
  const all = () => lines.map((l) => l.text).join('\n');
  // each line parsed once, however often a test asks (a harness's logs are read while polling)
  const parsed: Record<string, unknown>[] = [];
  let parsedLines = 0;
  return {
    child,
    lines,
    records() {
      if (parsedLines < lines.length) {
        parsed.push(...jsonRecords(lines.slice(parsedLines)));
        parsedLines = lines.length;
      }
      return parsed.slice();
    },
    text: (stream) => lines.filter((l) => l.stream === stream).map((l) => l.text).join('\n'),
    lineMatching(match, timeoutMs, what) {
      return new Promise<LogLine>((resolve, reject) => {
        const found = lines.find(match);
        if (found) {
          resolve(found);
          return;
        }
        const done = (): void => {
          clearTimeout(timer);
          listeners.delete(look);
          child.off('exit', onExit);
          child.off('error', onError);
        };
        const look = (line: LogLine): void => {
          if (!match(line)) return;
          done();
          resolve(line);
        };
        const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
          done();
          reject(new Error(`process exited (${code ?? signal}) before ${what}:\n${all()}`));
        };
        const onError = (err: Error): void => {
          done();
          reject(err);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no ${what} within ${timeoutMs} ms:\n${all()}`));
        }, timeoutMs);
        listeners.add(look);
        child.once('exit', onExit);
        child.once('error', onError);
        if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
      });
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM', stopTimeoutMs = 20_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const status = await exitOf(child, stopTimeoutMs);
      if (!status.timedOut) {
        // the streams' last lines, for at most 2 s; the timer cleared, so that it never holds the test's process open
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([Promise.all(ended), new Promise<void>((resolve) => { timer = setTimeout(resolve, 2000); })]);
        clearTimeout(timer);
      }
      return status;
    },
  };
}

export interface ServerProcess extends LoggedProcess {
  port: number;
  url: string;
}

/**
 * Runs `node dist/src/cli/server.js` with exactly `env` (plus PATH; WORKERS unset unless
 * given, as `npm start`), keeps every line it writes on stdout and stderr, and resolves with
 * the port of its "listening" line (use PORT=0): with several processes (WORKERS unset on a
 * machine of several cores, or above 1), the primary's "listening: all children", so every
 * child serves. LOG_LEVEL must let info lines through. The process is SIGKILLed at teardown
 * if it is still running (its children then stop by themselves: src/cli/server.ts).
 */
export async function spawnServer(t: Teardown, env: Record<string, string>, timeoutMs = 20_000): Promise<ServerProcess> {
  const server = spawnLogged(t, SERVER_SCRIPT, env);
  const ready = serverProcessesOf(env) === 1 ? 'listening' : 'listening: all children';
  const portOf = (line: LogLine): number | null => {
    if (line.stream !== 'stdout' || !line.text.includes(ready)) return null;
    const m = /"port":(\d+)/.exec(line.text);
    return m ? Number(m[1]) : null;
  };
  const listening = await server.lineMatching((line) => portOf(line) !== null, timeoutMs, '"listening" line');
  const port = portOf(listening) as number;
  return { ...server, port, url: `http://127.0.0.1:${port}` };
}

/**
 * Runs `node dist/src/cli/worker.js` with exactly `env` (plus PATH; LOG_LEVEL at least info,
 * since readiness is its "usage worker running" line) and keeps every line it writes.
 * SIGKILLed at teardown if still running.
 */
export async function spawnWorker(t: Teardown, env: Record<string, string>, timeoutMs = 20_000): Promise<LoggedProcess> {
  const level = ['trace', 'debug', 'info'].includes(env.LOG_LEVEL ?? '') ? env.LOG_LEVEL as string : 'info';
  const worker = spawnLogged(t, WORKER_SCRIPT, { ...env, LOG_LEVEL: level });
  await worker.lineMatching((line) => line.stream === 'stdout' && line.text.includes('usage worker running'), timeoutMs, '"usage worker running" line');
  return worker;
}

// ---- a Redis Cluster ----------------------------------------------------------------------

/** A free loopback port (and its cluster bus port, +10000) at the moment of asking. */
async function freeClusterPort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 35000);
    const ok = await Promise.all([port, port + 10000].map((p) => new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(p, '127.0.0.1', () => s.close(() => resolve(true)));
    })));
    if (ok.every(Boolean)) return port;
  }
}

export interface LocalCluster {
  ports: number[];
  nodes: string;
}

/**
 * A Redis Cluster of three masters on loopback ports, in a temporary folder; the servers
 * are killed and the folder removed at teardown (register it before the service's harness,
 * so the service stops first: tap runs teardowns last-in, first-out).
 */
export async function startRedisCluster(t: Teardown, masters = 3): Promise<LocalCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'redis-cluster-'));
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    await Promise.all(children.map(killChild));
    await rm(dir, { recursive: true, force: true });
  });
  const ports: number[] = [];
  while (ports.length < masters) {
    const port = await freeClusterPort();
    if (ports.includes(port)) continue;
    ports.push(port);
    const child = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
      '--cluster-config-file', `nodes-${port}.conf`, '--dir', dir, '--save', '', '--appendonly', 'no',
      '--daemonize', 'no',
    ], { stdio: 'ignore' });
    children.push(child);
  }
  for (const port of ports) {
    await waitFor(`redis-server on ${port}`, async () => {
      try {
        const { stdout } = await run('redis-cli', ['-p', String(port), 'ping']);
        return stdout.trim() === 'PONG';
      } catch {
        return false;
      }
    }, 10_000);
  }
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
  for (const port of ports) {
    await waitFor(`cluster_state:ok on ${port}`, async () => {
      const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
      return stdout.includes('cluster_state:ok');
    }, 15_000);
  }
  return { ports, nodes: ports.map((p) => `127.0.0.1:${p}`).join(',') };
}
