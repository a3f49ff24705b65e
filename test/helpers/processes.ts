import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Teardown } from './harness.js';

// Real processes for tests that need more than the in-process service: a private
// redis-server the test may break at will, and the server itself as a child process
// (`node dist/src/cli/server.js`), whose every stdout and stderr line is kept.

const run = promisify(execFile);

/** The server of the same build as this helper (dist/test/helpers -> dist/src/cli). */
export const SERVER_SCRIPT = fileURLToPath(new URL('../../src/cli/server.js', import.meta.url));

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

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
    const until = Date.now() + 10_000;
    let up = false;
    while (!up && Date.now() < until && started.exitCode === null) {
      up = await cli(port, ['ping']).then((s) => s === 'PONG', () => false);
      if (!up) await sleep(25);
    }
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

/** The lines that are JSON objects (pino's records), parsed; the others skipped. */
export function jsonRecords(lines: LogLine[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of lines) {
    try {
      const parsed: unknown = JSON.parse(line.text);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) out.push(parsed as Record<string, unknown>);
    } catch {
      // not a JSON line
    }
  }
  return out;
}

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  url: string;
  /** every complete line the process wrote so far, both streams, in arrival order */
  lines: LogLine[];
  /** the lines parsed as JSON (pino's), skipping those that are not */
  records(): Record<string, unknown>[];
  /** sends the signal and waits for the exit (and for both streams to be read to the end) */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitStatus>;
}

/**
 * Runs `node dist/src/cli/server.js` with exactly `env` (plus PATH), keeps every line it
 * writes on stdout and stderr, and resolves with the port of its "listening" line (use
 * PORT=0). The process is SIGKILLed at teardown if it is still running.
 */
export async function spawnServer(t: Teardown, env: Record<string, string>, timeoutMs = 20_000): Promise<ServerProcess> {
  const born = Date.now();
  const child = spawn(process.execPath, [SERVER_SCRIPT], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => killChild(child));
  const lines: LogLine[] = [];
  let onLine: ((line: LogLine) => void) | null = null;
  const ended: Promise<void>[] = [];
  for (const stream of ['stdout', 'stderr'] as const) {
    const source = child[stream];
    if (!source) throw new Error(`no ${stream} pipe`);
    let rest = '';
    const push = (text: string) => {
      const line: LogLine = { stream, text, at: Date.now() - born };
      lines.push(line);
      onLine?.(line);
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
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      onLine = null;
      reject(new Error(`no "listening" line within ${timeoutMs} ms:\n${lines.map((l) => l.text).join('\n')}`));
    }, timeoutMs);
    const look = (line: LogLine): void => {
      if (line.stream !== 'stdout' || !line.text.includes('listening')) return;
      const m = /"port":(\d+)/.exec(line.text);
      if (!m) return;
      clearTimeout(timer);
      onLine = null;
      resolve(Number(m[1]));
    };
    for (const line of lines) look(line);
    onLine = look;
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before listening:\n${lines.map((l) => l.text).join('\n')}`));
    });
  });
  return {
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    lines,
    records: () => jsonRecords(lines),
    async stop(signal: NodeJS.Signals = 'SIGTERM', stopTimeoutMs = 20_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const status = await exitOf(child, stopTimeoutMs);
      if (!status.timedOut) await Promise.race([Promise.all(ended), sleep(2000)]);
      return status;
    },
  };
}
