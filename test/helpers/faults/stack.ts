import { Redis } from 'ioredis';
import postgres from 'postgres';
import { KeySpace } from '../../../src/redis/keys.js';
import { createLicense, DATABASE_URL, NO_RATE_LIMITS, testEnv, type Teardown, type TestLicense } from '../harness.js';
import { call, clientOf, type Client, type Outcome } from '../http.js';
import {
  spawnServer, spawnWorker, startPrivateRedis, type ExitStatus, type LoggedProcess, type PrivateRedis, type ServerProcess,
} from '../processes.js';
import { startPostgresProxy, type CuttableProxy } from '../proxy.js';
import { sleep, waitFor } from '../wait.js';

// The private stack of a fault test. Each test owns what it breaks: a private redis-server,
// the server (and optionally the usage worker) as child processes it may SIGKILL and restart
// with the same environment, and its own Postgres schema, reached through a CuttableProxy
// when the test cuts Postgres.

// ---- the stack -----------------------------------------------------------------------------

export interface StackOptions {
  /** names the Redis prefix and the Postgres schema */
  label: string;
  /** environment of the servers and the worker, over the defaults (see startStack) */
  env?: Record<string, string>;
  /** more redis-server arguments, e.g. ['--appendonly', 'yes', '--appendfsync', 'always'] */
  redisArgs?: string[];
  /** reach Postgres through a CuttableProxy (stack.proxy) the test can cut or blackhole */
  proxyPostgres?: boolean;
  /** run the usage worker as its own process (stack.worker); the servers then run RUN_WORKER=0 */
  standaloneWorker?: boolean;
  /** server processes to start (default 1); 0 starts none (startServer later) */
  servers?: number;
}

export type FaultLicense = TestLicense;

export class Stack {
  readonly keys: KeySpace;
  /** the latest process of each server slot (a killed one stays until restarted) */
  readonly servers: ServerProcess[] = [];
  worker: LoggedProcess | null = null;

  constructor(
    private readonly t: Teardown,
    /** the environment every server and worker of this stack starts with */
    readonly env: Record<string, string>,
    readonly redis: PrivateRedis,
    /** a client of the test's own on the private Redis */
    readonly redisClient: Redis,
    /** a client of the test's own on Postgres, directly (never through the proxy), search_path = the schema */
    readonly sql: postgres.Sql,
    readonly proxy: CuttableProxy | null,
  ) {
    this.keys = new KeySpace(env.REDIS_PREFIX as string);
  }

  /** Registers a cleanup on the test that owns the stack. */
  teardown(fn: () => unknown): void {
    this.t.teardown(fn);
  }

  get prefix(): string {
    return this.env.REDIS_PREFIX as string;
  }

  get schema(): string {
    return this.env.PG_SCHEMA as string;
  }

  /** Base URL of server slot i (its latest process, which may be dead). */
  url(i = 0): string {
    const server = this.servers[i];
    if (!server) throw new Error(`no server in slot ${i}`);
    return server.url;
  }

  /** Starts (or restarts, after a kill) server slot i with the stack's env, plus extraEnv. */
  async startServer(i = this.servers.length, extraEnv: Record<string, string> = {}): Promise<ServerProcess> {
    const server = await spawnServer(this.t, { ...this.env, ...extraEnv });
    this.servers[i] = server;
    return server;
  }

  /** SIGKILLs server slot i and waits for its exit. */
  async killServer(i = 0): Promise<ExitStatus> {
    const server = this.servers[i];
    if (!server) throw new Error(`no server in slot ${i}`);
    return server.stop('SIGKILL', 5000);
  }

  /** Starts (or restarts) the standalone worker with the stack's env. */
  async startWorker(extraEnv: Record<string, string> = {}): Promise<LoggedProcess> {
    this.worker = await spawnWorker(this.t, { ...this.env, ...extraEnv });
    return this.worker;
  }

  async killWorker(): Promise<ExitStatus> {
    if (!this.worker) throw new Error('no standalone worker');
    return this.worker.stop('SIGKILL', 5000);
  }

  /**
   * SIGKILLs the worker at a moment it holds events it has not acknowledged. A fast worker
   * acknowledges between a poll and a kill, so it is frozen (SIGSTOP) while pending is read,
   * and let go again (SIGCONT) to try later when it held nothing. Resolves with the exit and
   * the events it left pending.
   */
  async killWorkerHoldingBatch(timeoutMs = 5000): Promise<{ exit: ExitStatus; pending: number }> {
    const worker = this.worker;
    if (!worker?.child.pid) throw new Error('no standalone worker');
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      worker.child.kill('SIGSTOP');
      const pending = await this.pending();
      if (pending > 0 || Date.now() > deadline) {
        const exit = await worker.stop('SIGKILL', 5000);
        return { exit, pending: await this.pending() };
      }
      worker.child.kill('SIGCONT');
      await sleep(5 + Math.floor(Math.random() * 20));
    }
  }

  /** Usage events in the streams, i.e. not yet in Postgres (what /healthz calls usageLag). */
  async lag(): Promise<number> {
    const lengths = await Promise.all(this.keys.streams.map((s) => this.redisClient.xlen(s)));
    return lengths.reduce((a, b) => a + b, 0);
  }

  /** Events a worker has read and not yet acknowledged (the consumer group's pending lists). */
  async pending(): Promise<number> {
    const counts = await Promise.all(this.keys.streams.map(async (s) => {
      const summary = await this.redisClient.xpending(s, 'usage').catch(() => [0]) as [number | string, ...unknown[]];
      return Number(summary[0]);
    }));
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * Where the events in the streams stand: unread (after the group's last delivered id),
   * pending (read, not acknowledged), or acknowledged but still in the stream (a worker
   * died between XACK and XDEL: persisted, yet counted as lag).
   */
  async streamState(): Promise<{ lag: number; unread: number; pending: number; ackedNotDeleted: number }> {
    const state = { lag: 0, unread: 0, pending: 0, ackedNotDeleted: 0 };
    const cmp = (a: string, b: string): number => {
      const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
      const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
      return am === bm ? (as === bs ? 0 : as < bs ? -1 : 1) : am < bm ? -1 : 1;
    };
    for (const stream of this.keys.streams) {
      const entries = await this.redisClient.xrange(stream, '-', '+');
      if (entries.length === 0) continue;
      state.lag += entries.length;
      const groups = await this.redisClient.xinfo('GROUPS', stream).catch(() => []) as unknown[][];
      const group = groups.find((g) => g[g.indexOf('name') + 1] === 'usage');
      const delivered = group ? String(group[group.indexOf('last-delivered-id') + 1]) : '0-0';
      const pel = await this.redisClient.xpending(stream, 'usage', '-', '+', 1_000_000).catch(() => []) as [string, ...unknown[]][];
      const pendingIds = new Set(pel.map((p) => p[0]));
      for (const [id] of entries) {
        if (pendingIds.has(id)) state.pending++;
        else if (cmp(id, delivered) > 0) state.unread++;
        else state.ackedNotDeleted++;
      }
    }
    return state;
  }

  async deadLetters(): Promise<number> {
    return this.redisClient.xlen(this.keys.deadLetters);
  }

  /** Waits until every usage stream is empty; false after timeoutMs. */
  async drained(timeoutMs = 30_000): Promise<boolean> {
    // a read failed by a failover's closing connection is asked again
    return waitFor('the usage streams to empty', async () => (await this.lag().catch(() => -1)) === 0, timeoutMs).then(() => true, () => false);
  }

  request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, slot = 0): Promise<Outcome> {
    return call(this.url(slot), method, path, body, headers);
  }

  /** A Client of server slot i (its latest process), for the helpers that need answers (throws on none). */
  client(slot = 0): Client {
    return clientOf(() => this.url(slot));
  }

  /** GET /healthz of slot i. */
  health(slot = 0, timeoutMs = 5000): Promise<Outcome> {
    return call(this.url(slot), 'GET', '/healthz', undefined, {}, timeoutMs);
  }

  /** n licenses through the admin API (quota a million each unless said otherwise). */
  async createLicenses(n: number, input: { totalQuota?: number; domains?: string[] } = {}): Promise<FaultLicense[]> {
    const out: FaultLicense[] = [];
    for (let i = 0; i < n; i++) {
      out.push(await createLicense(this.client(), {
        organizationName: `Arıza ${i} A.Ş.`,
        password: `fault-password-${i}`,
        totalQuota: input.totalQuota ?? 1_000_000,
        ...(input.domains ? { domains: input.domains } : {}),
      }));
    }
    return out;
  }
}

/**
 * Starts a private Redis, the optional proxy in front of the shared Postgres, the servers
 * and the optional standalone worker. Env defaults: testEnv(label) with the private
 * REDIS_URL, DATABASE_URL (through the proxy if any), no rate limits, QUOTA_CACHE_SECONDS=0,
 * LOG_LEVEL=info, WORKERS=1, RUN_WORKER=0 with a standalone worker else 1; options.env wins.
 * Teardown: processes SIGKILLed, schema dropped, clients closed, Redis killed, proxy closed.
 */
export async function startStack(t: Teardown, options: StackOptions): Promise<Stack> {
  let proxy: CuttableProxy | null = null;
  let databaseUrl = DATABASE_URL;
  if (options.proxyPostgres) ({ proxy, url: databaseUrl } = await startPostgresProxy(t)); // closed last: teardowns run last-in, first-out
  const redis = await startPrivateRedis(t, options.redisArgs ?? []);
  const env = testEnv(options.label, {
    REDIS_URL: redis.url,
    DATABASE_URL: databaseUrl,
    ...NO_RATE_LIMITS,
    QUOTA_CACHE_SECONDS: '0',
    LOG_LEVEL: 'info',
    // one process per server slot: a fault test kills a server and means the process that
    // serves (a SIGKILLed primary's children would stop gently); several processes of one
    // server are the subject of workers.redisRestart, which asks for them
    WORKERS: '1',
    RUN_WORKER: options.standaloneWorker ? '0' : '1',
    ...options.env,
  });
  const redisClient = new Redis(redis.url, { maxRetriesPerRequest: 2, lazyConnect: false });
  redisClient.on('error', () => {}); // the test may break this Redis
  const sql = postgres(DATABASE_URL, { onnotice: () => {}, max: 4, connection: { search_path: env.PG_SCHEMA as string } });
  t.teardown(async () => { // after every process of the stack is killed (registered later)
    try {
      await sql.unsafe(`drop schema if exists "${env.PG_SCHEMA}" cascade`);
    } finally {
      redisClient.disconnect();
      await sql.end({ timeout: 2 });
    }
  });
  const stack = new Stack(t, env, redis, redisClient, sql, proxy);
  for (let i = 0; i < (options.servers ?? 1); i++) await stack.startServer(i);
  if (options.standaloneWorker) await stack.startWorker();
  return stack;
}

// ---- the server's log ---------------------------------------------------------------------

/**
 * The server's warnings and errors, counted by message and error message: evidence for a
 * failure report (set FAULT_DEBUG=1 to have the tests print it).
 */
export function logSummary(stack: Stack, slot = 0): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of stack.servers[slot]?.records() ?? []) {
    if (Number(r.level) < 40) continue;
    const err = r.err as { message?: string } | undefined;
    const key = `${String(r.msg)} | ${err?.message ?? ''}`.slice(0, 200);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
