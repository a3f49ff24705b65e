import { readFile } from 'node:fs/promises';
import type { Teardown } from './harness.js';
import { SERVER_SCRIPT, spawnServer, type ServerProcess } from './processes.js';
import { sleep, until } from './wait.js';

// The service as `npm start` runs it with its default settings: `node dist/src/cli/server.js`
// with WORKERS unset, so a primary and one server process per core on one port
// (src/cli/primary.ts), the usage worker in child 0. The test reaches it only through the
// port, Redis and Postgres, as a user and an operator would.

/** A deployed service: the primary and its children, as far as their log lines tell. */
export interface DeployedService {
  port: number;
  /** the usage worker runs in a child process, out of the test's reach: drain it through Redis (Harness.drainWorker) */
  worker: null;
  /** the process the test started (the primary; with WORKERS=1, the one server process) */
  primary: number;
  server: ServerProcess;
  /** the server processes serving now (the primary's children; the primary itself when it is the only one), from the primary's log */
  children(): number[];
  /** SIGTERM to the primary, as a supervisor stops it; resolves once it exited 0, rejects otherwise */
  stop(): Promise<void>;
}

/** How long the primary may take to stop at teardown before everything is SIGKILLed. */
const TEARDOWN_STOP_MS = 10_000;

/**
 * Spawns the server with exactly `env` (plus PATH) and resolves once every child listens
 * ("listening: all children"; LOG_LEVEL must let info through). At teardown the primary gets
 * SIGTERM; whatever still runs TEARDOWN_STOP_MS later (the primary, its children) is SIGKILLed,
 * so no process of the test outlives it. Register it after testStorage: tap runs teardowns
 * last in, first out, so the processes are gone before the test's keys and schema are removed.
 */
export async function startDeployed(t: Teardown, env: Record<string, string>, timeoutMs = 30_000): Promise<DeployedService> {
  const server = await spawnServer(t, env, timeoutMs);
  const primary = server.child.pid as number;
  const children = (): number[] => {
    // 'child started' names the pid of each child as it starts (again, after a crash): the last per index serves
    const byIndex = new Map<number, number>();
    for (const r of server.records()) if (r.msg === 'child started') byIndex.set(r.child as number, r.pid as number);
    return byIndex.size === 0 ? [primary] : [...byIndex.entries()].sort((a, b) => a[0] - b[0]).map(([, pid]) => pid);
  };
  const exited = () => server.child.exitCode !== null || server.child.signalCode !== null;
  t.teardown(async () => {
    const started = children().filter((pid) => pid !== primary);
    if (!exited()) await server.stop('SIGTERM', TEARDOWN_STOP_MS);
    if (!exited()) await server.stop('SIGKILL', 5000);
    // a primary that exited waited for its children, unless it was SIGKILLed: those stop by themselves; a hung one is killed
    const left = async () => (await Promise.all(started.map(async (pid) => (await isServerProcess(pid)) ? pid : null))).filter((p) => p !== null);
    if (!(await until(async () => (await left()).length === 0, { timeoutMs: TEARDOWN_STOP_MS, intervalMs: 50 }))) {
      for (const pid of await left()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone since the look
        }
      }
      await sleep(100);
    }
  });
  return {
    port: server.port,
    worker: null,
    primary,
    server,
    children,
    async stop() {
      const exit = await server.stop('SIGTERM', 30_000);
      if (exit.timedOut || exit.code !== 0) {
        throw new Error(`the service did not stop cleanly (${JSON.stringify(exit)}): ${server.text('stderr')}`);
      }
    },
  };
}

/** Whether `pid` is still a live process of the server script (not a zombie, not a pid the kernel gave to someone else since). */
async function isServerProcess(pid: number): Promise<boolean> {
  const [stat, cmdline] = await Promise.all([
    readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''),
    readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''),
  ]);
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== '' && state !== 'Z' && cmdline.split('\0').includes(SERVER_SCRIPT);
}

/** CPU time (user + system, in clock ticks) a process has used so far, from /proc/<pid>/stat; null when it is gone. */
export async function cpuTicksOf(pid: number): Promise<number | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // after the command: state(0) ppid(1) ... utime(11) stime(12)
  return Number(fields[11]) + Number(fields[12]);
}
