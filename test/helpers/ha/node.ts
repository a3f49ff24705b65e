import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Teardown } from '../harness.js';
import { exitOf } from '../processes.js';
import { waitFor } from '../wait.js';
import { call, parseInfo, ReplyError, type Address, type CallOptions, type Reply } from './resp.js';

// One process of a highly-available topology (a redis-server of a replicated set or of a
// Cluster, or a redis-sentinel), in its own temporary folder, on a port of its own that it
// keeps across restarts. The test may signal it, kill it and start it again; at teardown it
// is SIGKILLed (paused or not) and its folder removed, and a test process that exits
// without its teardown SIGKILLs every one still running.

/** How a redis-server persists: AOF fsynced on every write, every second, or no AOF (never an RDB: --save ""). */
export type Appendfsync = 'always' | 'everysec' | 'no-aof';

export function persistenceArgs(appendfsync: Appendfsync): string[] {
  const base = ['--save', ''];
  return appendfsync === 'no-aof' ? [...base, '--appendonly', 'no'] : [...base, '--appendonly', 'yes', '--appendfsync', appendfsync];
}

/** Every child still running: SIGKILLed if the test's process exits without its teardown. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** True when nothing listens on host:port now. */
export async function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

/** A port free now on every one of `hosts` (with its cluster bus port, +10000, when `bus`). */
export async function freePortOn(hosts: string[], bus = false): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 35000);
    const ports = bus ? [port, port + 10000] : [port];
    const checks = await Promise.all(hosts.flatMap((h) => ports.map((p) => portFree(h, p))));
    if (checks.every(Boolean)) return port;
  }
  throw new Error(`no free port on ${hosts.join(', ')} in 200 tries`);
}

export interface LaunchSpec {
  /** what the test calls this node in messages: "master", "replica-1", "sentinel-2", "node-4" */
  name: string;
  binary: 'redis-server' | 'redis-sentinel';
  /** the address it serves on (and is known by to its peers) */
  host: string;
  /** its requirepass, used by call() */
  password?: string | undefined;
  /** a port free now (called again when another process took it before the bind) */
  pickPort(): Promise<number>;
  /** the arguments of its first launch on `port` in `dir` (e.g. a config file written there) */
  argsFor(port: number, dir: string): Promise<string[]> | string[];
}

/** The output kept of each node, for error messages: its last lines. */
const KEPT_LINES = 60;

export class RedisNode implements Address {
  port = 0;
  dir = '';
  /** the arguments of the next launch (restart); the replicated set rewrites its --replicaof */
  args: string[] = [];
  private child: ChildProcess | null = null;
  private stopped = false;
  private readonly output: string[] = [];

  private constructor(private readonly spec: LaunchSpec) {}

  /** Starts a node (a new port until one binds, 5 tries) and waits for its PING; killed and its folder removed at teardown. */
  static async start(t: Teardown, spec: LaunchSpec): Promise<RedisNode> {
    const node = new RedisNode(spec);
    node.dir = await mkdtemp(path.join(tmpdir(), `redis-ha-${spec.name}-`));
    t.teardown(async () => {
      await node.kill();
      await rm(node.dir, { recursive: true, force: true });
    });
    for (let attempt = 1; ; attempt++) {
      node.port = await spec.pickPort();
      node.args = await spec.argsFor(node.port, node.dir);
      if (await node.launch()) return node;
      if (attempt >= 5) throw new Error(`${spec.name} (${spec.binary}) did not start in 5 tries:\n${node.log()}`);
    }
  }

  get name(): string {
    return this.spec.name;
  }

  get host(): string {
    return this.spec.host;
  }

  get password(): string | undefined {
    return this.spec.password;
  }

  /** "host:port" */
  get address(): string {
    return `${this.host}:${this.port}`;
  }

  get url(): string {
    return `redis://${this.password === undefined ? '' : `:${encodeURIComponent(this.password)}@`}${this.host}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.running ? this.child?.pid : undefined;
  }

  /** its process is alive (paused or not) */
  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGSTOPped and not yet SIGCONTinued */
  get paused(): boolean {
    return this.running && this.stopped;
  }

  /** alive and not paused: it can answer */
  get answering(): boolean {
    return this.running && !this.stopped;
  }

  /** Its last lines of output (stdout and stderr). */
  log(): string {
    return this.output.join('');
  }

  /** One command; rejects on an error reply, or after timeoutMs (a paused or cut-off node). */
  call(...args: (string | number)[]): Promise<Reply> {
    return call(this, args, { password: this.password });
  }

  /** One command with options: a deadline of its own, commands before it (e.g. [['READONLY']] on a Cluster replica). */
  command(args: (string | number)[], options: Omit<CallOptions, 'password'>): Promise<Reply> {
    return call(this, args, { ...options, password: this.password });
  }

  /** INFO [section] as a record. */
  async info(section = 'all'): Promise<Record<string, string>> {
    return parseInfo(String(await this.call('INFO', section)));
  }

  /** ROLE's first element: "master", "slave" or "sentinel". */
  async role(): Promise<string> {
    const reply = await this.call('ROLE');
    return String((reply as Reply[])[0]);
  }

  /** Sends a signal to its process; SIGKILL and SIGTERM wait for the exit (10 s at most). */
  async signal(sig: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    child.kill(sig);
    if (sig === 'SIGSTOP') this.stopped = true;
    if (sig === 'SIGCONT') this.stopped = false;
    if (sig === 'SIGKILL' || sig === 'SIGTERM') {
      if (sig === 'SIGTERM' && this.stopped) child.kill('SIGCONT'); // a paused process handles SIGTERM only once running
      const status = await exitOf(child, 10_000);
      if (status.timedOut) throw new Error(`${this.name} (pid ${child.pid}) did not exit within 10 s of ${sig}`);
    }
  }

  pause(): Promise<void> {
    return this.signal('SIGSTOP');
  }

  resume(): Promise<void> {
    return this.signal('SIGCONT');
  }

  kill(): Promise<void> {
    return this.signal('SIGKILL');
  }

  /** Starts it again (after a kill) on the same port and folder with `args` plus extraArgs; throws unless it answers PING. */
  async restart(extraArgs: string[] = []): Promise<void> {
    if (this.running) throw new Error(`${this.name} is still running (pid ${this.child?.pid}): kill it first`);
    if (!(await this.launch(extraArgs))) throw new Error(`${this.name} did not start again on ${this.address}:\n${this.log()}`);
  }

  /** Spawns the process and waits (10 s at most) for PING to answer PONG; false if it exited first or never answered. */
  private async launch(extraArgs: string[] = []): Promise<boolean> {
    const child = spawn(this.spec.binary, [...this.args, ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.stopped = false;
    running.add(child);
    child.once('exit', () => running.delete(child));
    const keep = (chunk: Buffer) => {
      this.output.push(chunk.toString());
      if (this.output.length > KEPT_LINES) this.output.splice(0, this.output.length - KEPT_LINES);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.once('error', (err) => {
      keep(Buffer.from(`spawn ${this.spec.binary}: ${err.message}\n`));
      running.delete(child);
      if (this.child === child) this.child = null; // never started: not running
    });
    let up = false;
    let refused: Error | null = null;
    await waitFor(`${this.name} to answer PING on ${this.address}`, async () => {
      if (!this.running) return true;
      try {
        up = (await this.command(['PING'], { timeoutMs: 1000 })) === 'PONG';
      } catch (err) {
        if (err instanceof ReplyError && !/LOADING/.test(err.message)) refused = err; // NOAUTH, WRONGPASS: a mistake of the test
      }
      return up || refused !== null;
    }, 10_000, 50).catch(() => {});
    if (!up) await this.kill();
    if (refused) throw refused;
    return up;
  }
}
