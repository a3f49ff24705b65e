import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { InstanceMetrics } from '../metrics/instance.js';
import { claimFreePort, claimPort } from './portClaim.js';
import { STOP_FLUSH_MS } from '../stopFlush.js';

// WORKERS=N > 1: this process serves nothing itself. It forks N copies of the server
// (the same entry, marked by CHILD_ENV), which all listen on one port: uWebSockets.js
// listens with SO_REUSEPORT, so the kernel spreads the connections over them (Node's
// cluster module would not help: uWS does not use node:net, whose handles cluster shares).
// The primary restarts a child that dies, forwards SIGTERM/SIGINT, exits when all have
// stopped, and adds up the children's metrics when one of them is scraped
// (src/metrics/instance.ts).

/** Set in a child's environment to its index: that process serves (src/cli/server.ts). */
export const CHILD_ENV = 'LICENSE_SERVICE_CHILD';

/** What a child tells the primary once it listens. */
export interface ListeningMessage {
  type: 'listening';
  port: number;
}

/** What a child that cannot start tells the primary (instead of stderr), before it exits 1. */
export interface CannotStartMessage {
  type: 'cannot start';
  reason: string;
}

/** The first restart of a crashed child waits this long, doubled after each crash in a row. */
const RESTART_BACKOFF_MS = 250;
const RESTART_BACKOFF_MAX_MS = 10_000;
/** A child that lived this long before dying starts a new series of crashes. */
const STABLE_MS = 30_000;
/** Crashes in a row of one child, each within STABLE_MS of its start, after which the primary gives up. */
const RESTART_LIMIT = 5;

interface Slot {
  index: number;
  child: ChildProcess | null;
  startedAt: number;
  /** crashes in a row, each soon after its start */
  crashes: number;
  listening: boolean;
  restartTimer: NodeJS.Timeout | null;
}

/**
 * Runs N children and supervises them until a signal stops them all. The usage worker
 * (and the webhook sender beside it) runs in child 0 only, when RUN_WORKER allows it:
 * one consumer of the usage group per host keeps the batches as large as one process
 * gathers them (docs/operations.md#processes).
 */
export async function runPrimary(config: Config, log: Logger, script: string): Promise<void> {
  // PORT=0: uWS binds a kernel-picked port without SO_REUSEPORT (tried: a second bind to it
  // fails), so the primary asks the kernel for a free port and gives it to every child.
  // Either way the port is claimed first: no other server may share it (src/cli/portClaim.ts).
  const port = config.port === 0 ? await claimFreePort(config.host) : await claimPort(config.host, config.port);
  const slots: Slot[] = Array.from({ length: config.workers }, (_, index) =>
    ({ index, child: null, startedAt: 0, crashes: 0, listening: false, restartTimer: null }));
  const metrics = new InstanceMetrics(slots.length);
  let up = false;
  let stopping = false;
  let exitCode = 0;
  let saidWhy = false;

  const start = (slot: Slot) => {
    slot.restartTimer = null;
    slot.listening = false;
    slot.startedAt = Date.now();
    const env: NodeJS.ProcessEnv = { ...process.env, [CHILD_ENV]: String(slot.index), PORT: String(port) };
    if (slot.index !== 0) env.RUN_WORKER = '0';
    // advanced: the metrics cross the channel as they are (NaN stays NaN; JSON would make it null)
    const child = fork(script, process.argv.slice(2), { env, serialization: 'advanced' });
    slot.child = child;
    log.info({ child: slot.index, pid: child.pid }, 'child started');
    child.on('message', (message: Partial<ListeningMessage> | Partial<CannotStartMessage> | null) => {
      if (metrics.received(slot.index, child, message)) return;
      if (message?.type === 'cannot start' && typeof message.reason === 'string') {
        // children starting together fail for the same cause: said once, as one process says it;
        // a child started again later (after a crash) says why each time
        if (up || !saidWhy) process.stderr.write(`license-service: cannot start: ${message.reason}\n`);
        saidWhy = true;
        return;
      }
      if (message?.type !== 'listening' || typeof message.port !== 'number') return;
      slot.listening = true;
      metrics.started(slot.index, child); // asked for its figures from now on (a child still starting could not answer)
      if (!up && slots.every((s) => s.listening)) {
        up = true;
        log.info({ host: config.host, port, workers: slots.length, pids: slots.map((s) => s.child?.pid) }, 'listening: all children');
      }
    });
    child.on('exit', (code, signal) => {
      // handled once the channel is read to its end: a child that could not start has said why
      let handled = false;
      const handle = () => {
        if (handled) return;
        handled = true;
        clearTimeout(timer);
        onExit(slot, child, code, signal);
      };
      const timer = setTimeout(handle, 1000);
      if (child.connected) child.once('disconnect', handle);
      else handle();
    });
  };

  const onExit = (slot: Slot, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null) => {
    if (slot.child !== child) return;
    slot.child = null;
    metrics.exited(slot.index, child);
    if (stopping) {
      log.info({ child: slot.index, pid: child.pid, code, signal }, 'child stopped');
      if (code !== 0) exitCode = 1;
      if (slots.every((s) => s.child === null)) finish();
      return;
    }
    if (!up) {
      // a child that cannot start (Redis or Postgres unreachable) has said why (the primary wrote it to stderr)
      log.error({ child: slot.index, pid: child.pid, code, signal }, 'a child exited before every child listened: stopping');
      exitCode = code !== null && code !== 0 ? code : 1;
      stopAll('start failed');
      return;
    }
    slot.crashes = Date.now() - slot.startedAt >= STABLE_MS ? 1 : slot.crashes + 1;
    if (slot.crashes > RESTART_LIMIT) {
      log.error({ child: slot.index, crashes: slot.crashes - 1, code, signal }, 'a child keeps dying soon after its start: giving up');
      exitCode = 1;
      stopAll('crash loop');
      return;
    }
    const delay = Math.min(RESTART_BACKOFF_MS * 2 ** (slot.crashes - 1), RESTART_BACKOFF_MAX_MS);
    log.warn({ child: slot.index, pid: child.pid, code, signal, restartInMs: delay }, 'child died: restarting it');
    metrics.restarting(slot.index);
    slot.restartTimer = setTimeout(() => start(slot), delay);
  };

  const finish = () => {
    log.info({ code: exitCode }, 'stopped: every child has exited');
    process.exit(exitCode);
  };

  const stopAll = (reason: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ reason }, 'stopping: every child finishes its accepted requests and flushes');
    for (const slot of slots) {
      if (slot.restartTimer) clearTimeout(slot.restartTimer);
      slot.restartTimer = null;
      slot.child?.kill('SIGTERM');
    }
    // a child holds its own deadline (src/cli/server.ts); this one is for a child that ignores it
    setTimeout(() => {
      const left = slots.filter((s) => s.child !== null);
      log.error({ children: left.map((s) => s.child?.pid) }, 'children still running past the stop deadline: killing them');
      for (const s of left) s.child?.kill('SIGKILL');
      process.exit(1);
    }, config.shutdownTimeoutMs + STOP_FLUSH_MS + 4000).unref();
    if (slots.every((s) => s.child === null)) finish();
  };

  process.on('SIGTERM', () => stopAll('SIGTERM'));
  process.on('SIGINT', () => stopAll('SIGINT'));
  // every child reads the certificate again (a child started later reads the new one anyway)
  process.on('SIGHUP', () => {
    if (stopping) return;
    for (const slot of slots) slot.child?.kill('SIGHUP');
  });
  log.info({ workers: slots.length, port }, 'starting children');
  for (const slot of slots) start(slot);
}
