import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Teardown } from '../harness.js';
import { exitOf, jsonRecords, type ExitStatus, type LogLine } from '../processes.js';

// The usage worker as a child process of its own (`node dist/src/cli/worker.js`), which a
// fault test may SIGKILL and restart; every line it writes is kept.

/** The standalone usage worker of the same build as this helper. */
export const WORKER_SCRIPT = fileURLToPath(new URL('../../../src/cli/worker.js', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  lines: LogLine[];
  records(): Record<string, unknown>[];
  /** sends the signal and waits for the exit */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitStatus>;
}

/**
 * Runs `node dist/src/cli/worker.js` with exactly `env` (plus PATH; LOG_LEVEL at least info,
 * since readiness is its "usage worker running" line) and keeps every line it writes.
 * SIGKILLed at teardown if still running.
 */
export async function spawnWorker(t: Teardown, env: Record<string, string>, timeoutMs = 20_000): Promise<WorkerProcess> {
  const level = ['trace', 'debug', 'info'].includes(env.LOG_LEVEL ?? '') ? env.LOG_LEVEL as string : 'info';
  const born = Date.now();
  const child = spawn(process.execPath, [WORKER_SCRIPT], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env, LOG_LEVEL: level },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exitOf(child, 5000);
    }
  });
  const lines: LogLine[] = [];
  let ready: (() => void) | null = null;
  for (const stream of ['stdout', 'stderr'] as const) {
    let rest = '';
    child[stream]?.setEncoding('utf8');
    child[stream]?.on('data', (chunk: string) => {
      rest += chunk;
      let nl: number;
      while ((nl = rest.indexOf('\n')) >= 0) {
        const text = rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        lines.push({ stream, text, at: Date.now() - born });
        if (stream === 'stdout' && text.includes('usage worker running')) ready?.();
      }
    });
  }
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not running within ${timeoutMs} ms:\n${lines.map((l) => l.text).join('\n')}`)), timeoutMs);
    ready = () => {
      clearTimeout(timer);
      ready = null;
      resolve();
    };
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`worker exited (${code ?? signal}) before running:\n${lines.map((l) => l.text).join('\n')}`));
    });
  });
  return {
    child,
    lines,
    records: () => jsonRecords(lines),
    async stop(signal: NodeJS.Signals = 'SIGTERM', stopTimeoutMs = 20_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exitOf(child, stopTimeoutMs);
    },
  };
}
