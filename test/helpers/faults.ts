import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import type { Test } from 'tap';
import { KeySpace } from '../../src/redis/keys.js';
import { claimsOf, CuttableProxy, sleep, waitFor } from './durable.js';
import { ADMIN_TOKEN, DATABASE_URL, NO_RATE_LIMITS, testEnv, type Teardown } from './harness.js';
import { MSG } from './validate.js';
import {
  exitOf, spawnServer, startPrivateRedis, type ExitStatus, type LogLine, type PrivateRedis, type ServerProcess,
} from './processes.js';

// Fault scenarios ("the books balance through every failure"). Each test owns what it
// breaks: a private redis-server, the server (and optionally the usage worker) as child
// processes it may SIGKILL and restart with the same environment, and its own Postgres
// schema, reached through a CuttableProxy when the test cuts Postgres. A load driver plays
// clients over HTTP while the fault happens and keeps the client's side of the books;
// checkBooks compares them with Postgres and Redis once the usage streams are empty.

/** The standalone usage worker of the same build as this helper. */
export const WORKER_SCRIPT = fileURLToPath(new URL('../../src/cli/worker.js', import.meta.url));

// ---- HTTP with a deadline ------------------------------------------------------------------

/** What a client saw: an answer, no answer at all (refused, reset), or nothing within the deadline. */
export type Outcome =
  | { kind: 'answer'; status: number; body: any; text: string } // eslint-disable-line @typescript-eslint/no-explicit-any
  | { kind: 'noAnswer'; error: string }
  | { kind: 'timeout' };

/** One request; never throws. */
export async function call(
  base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 5000,
): Promise<Outcome> {
  try {
    const res = await fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { kind: 'answer', status: res.status, body: parsed, text };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return { kind: 'timeout' };
    return { kind: 'noAnswer', error: e.cause?.code ?? e.cause?.message ?? e.message };
  }
}

/** The outcome as one word for counting: the status, 'noAnswer' or 'timeout'. */
export function outcomeLabel(o: Outcome): string {
  return o.kind === 'answer' ? String(o.status) : o.kind;
}

// ---- processes -----------------------------------------------------------------------------

export interface WorkerProcess {
  child: ChildProcess;
  lines: LogLine[];
  records(): Record<string, unknown>[];
  /** sends the signal and waits for the exit */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitStatus>;
}

function parseRecords(lines: LogLine[]): Record<string, unknown>[] {
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
    records: () => parseRecords(lines),
    async stop(signal: NodeJS.Signals = 'SIGTERM', stopTimeoutMs = 20_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exitOf(child, stopTimeoutMs);
    },
  };
}

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

export interface FaultLicense {
  licenseKey: string;
  firmaId: string;
  password: string;
}

export class Stack {
  readonly keys: KeySpace;
  /** the latest process of each server slot (a killed one stays until restarted) */
  readonly servers: ServerProcess[] = [];
  worker: WorkerProcess | null = null;

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
  async startWorker(extraEnv: Record<string, string> = {}): Promise<WorkerProcess> {
    this.worker = await spawnWorker(this.t, { ...this.env, ...extraEnv });
    return this.worker;
  }

  async killWorker(): Promise<ExitStatus> {
    if (!this.worker) throw new Error('no standalone worker');
    return this.worker.stop('SIGKILL', 5000);
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
    return waitFor('the usage streams to empty', async () => (await this.lag()) === 0, timeoutMs).then(() => true, () => false);
  }

  request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, slot = 0): Promise<Outcome> {
    return call(this.url(slot), method, path, body, headers);
  }

  /** GET /healthz of slot i. */
  health(slot = 0, timeoutMs = 5000): Promise<Outcome> {
    return call(this.url(slot), 'GET', '/healthz', undefined, {}, timeoutMs);
  }

  /** n licenses through the admin API (quota a million each unless said otherwise). */
  async createLicenses(n: number, input: { totalQuota?: number; domains?: string[] } = {}): Promise<FaultLicense[]> {
    const out: FaultLicense[] = [];
    for (let i = 0; i < n; i++) {
      const password = `fault-password-${i}`;
      const res = await this.request('POST', '/admin/v1/licenses', {
        organizationName: `Arıza ${i} A.Ş.`,
        password,
        totalQuota: input.totalQuota ?? 1_000_000,
        expiryDate: new Date(Date.now() + 365 * 86400_000).toISOString(),
        ...(input.domains ? { domains: input.domains } : {}),
      }, { authorization: `Bearer ${ADMIN_TOKEN}` });
      if (res.kind !== 'answer' || res.status !== 201) throw new Error(`create license: ${JSON.stringify(res)}`);
      out.push({ licenseKey: res.body.data.licenseKey, firmaId: res.body.data.firmaId, password });
    }
    return out;
  }
}

/**
 * Starts a private Redis, the optional proxy in front of the shared Postgres, the servers
 * and the optional standalone worker. Env defaults: testEnv(label) with the private
 * REDIS_URL, DATABASE_URL (through the proxy if any), no rate limits, QUOTA_CACHE_SECONDS=0,
 * LOG_LEVEL=info, RUN_WORKER=0 with a standalone worker else 1; options.env wins.
 * Teardown: processes SIGKILLed, schema dropped, clients closed, Redis killed, proxy closed.
 */
export async function startStack(t: Teardown, options: StackOptions): Promise<Stack> {
  let proxy: CuttableProxy | null = null;
  let databaseUrl = DATABASE_URL;
  if (options.proxyPostgres) {
    const target = new URL(DATABASE_URL);
    const p = new CuttableProxy(Number(target.port || 5432), target.hostname);
    proxy = p;
    const via = new URL(DATABASE_URL);
    via.port = String(await p.listen());
    databaseUrl = via.toString();
    t.teardown(() => p.close()); // last: teardowns run last-in, first-out
  }
  const redis = await startPrivateRedis(t, options.redisArgs ?? []);
  const env = testEnv(options.label, {
    REDIS_URL: redis.url,
    DATABASE_URL: databaseUrl,
    ...NO_RATE_LIMITS,
    QUOTA_CACHE_SECONDS: '0',
    LOG_LEVEL: 'info',
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

// ---- load ----------------------------------------------------------------------------------

/** The client's side of one license's books. */
export interface LicenseBook {
  lic: FaultLicense;
  accessToken: string | null;
  /** sign tokens not yet validated (get-token's own) */
  spare: string[];
  /** token ids whose get-token or sign-token answered 200 */
  minted: Set<string>;
  /** every get-token and sign-token outcome but 200, counted ('401', '503', 'noAnswer', 'timeout') */
  mintFailures: Map<string, number>;
  /** token ids validate answered 200 */
  ok: Set<string>;
  /** token ids answered 200 a second time: double redemptions */
  doubles: string[];
  /** usedQuota of every 200 */
  usedQuotas: number[];
  /** every validate outcome but 200, counted, retries included */
  others: Map<string, number>;
  /** token ids whose validate answer was ever lost (no answer, timeout) or a 5xx */
  lost: Set<string>;
  /** lost, and not yet settled by a retry: token id -> the token */
  unsettled: Map<string, string>;
  /** retried tokens answered 400 "already used": their lost first attempt had spent them */
  retriedUsed: Set<string>;
}

export interface LoadOptions {
  /** concurrent client loops (mint one token, validate it), default 8 */
  concurrency?: number;
  /** per-request deadline, default 5000 ms */
  timeoutMs?: number;
  /** pause of a loop between iterations, default 0 */
  pauseMs?: number;
  /** pause of a loop after a failed request, default 50 ms */
  errorPauseMs?: number;
  /** base URL of each request, default the stack's servers round-robin */
  target?: () => string;
}

export interface TimelineEntry {
  at: number;
  license: number;
  outcome: string;
}

function bump(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/**
 * Clients over HTTP: per license one get-token, then loops of sign-token + validate. Every
 * outcome is kept on the client's side of the books; start() and stop() may alternate.
 */
export class Load {
  readonly books: LicenseBook[];
  /** every validate outcome, in order (retries too) */
  readonly timeline: TimelineEntry[] = [];
  private running = false;
  private stopOnTeardown = false;
  private loops: Promise<void>[] = [];
  private turn = 0;
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly pauseMs: number;
  private readonly errorPauseMs: number;
  private readonly target: () => string;

  constructor(readonly stack: Stack, licenses: FaultLicense[], options: LoadOptions = {}) {
    this.books = licenses.map((lic) => ({
      lic, accessToken: null, spare: [], minted: new Set(), mintFailures: new Map(), ok: new Set(), doubles: [],
      usedQuotas: [], others: new Map(), lost: new Set(), unsettled: new Map(), retriedUsed: new Set(),
    }));
    this.concurrency = options.concurrency ?? 8;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.pauseMs = options.pauseMs ?? 0;
    this.errorPauseMs = options.errorPauseMs ?? 50;
    let rr = 0;
    this.target = options.target ?? (() => stack.url(rr++ % stack.servers.length));
  }

  /** get-token for every license that has no access token yet, then the loops. */
  async start(): Promise<void> {
    if (this.running) return;
    if (!this.stopOnTeardown) {
      this.stopOnTeardown = true;
      this.stack.teardown(() => this.stop()); // before the processes are killed (last in, first out)
    }
    for (const book of this.books) if (book.accessToken === null) await this.getToken(book);
    this.running = true;
    this.loops = Array.from({ length: this.concurrency }, () => this.loop());
  }

  /** Stops the loops and waits for their requests in flight. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** validate 200s so far, every license. */
  okCount(): number {
    return this.books.reduce((n, b) => n + b.ok.size, 0);
  }

  unsettledCount(): number {
    return this.books.reduce((n, b) => n + b.unsettled.size, 0);
  }

  /** Every validate outcome but 200, summed over the licenses. */
  others(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const b of this.books) for (const [k, v] of b.others) out[k] = (out[k] ?? 0) + v;
    return out;
  }

  /** Every get-token/sign-token outcome but 200, summed over the licenses. */
  mintFailures(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const b of this.books) for (const [k, v] of b.mintFailures) out[k] = (out[k] ?? 0) + v;
    return out;
  }

  async waitForOk(n: number, timeoutMs = 20_000): Promise<void> {
    await waitFor(`${n} validate 200s (have ${this.okCount()})`, () => this.okCount() >= n, timeoutMs);
  }

  /**
   * A client retry: validates again every token whose answer was lost or 5xx, until each
   * has an answer that is not a 5xx or `rounds` are done. Resolves with the retry outcomes.
   */
  async retryUnsettled(rounds = 3): Promise<Record<string, number>> {
    const counts = new Map<string, number>();
    for (let round = 0; round < rounds && this.unsettledCount() > 0; round++) {
      if (round > 0) await sleep(500);
      for (const [index, book] of this.books.entries()) {
        const pending = [...book.unsettled.values()];
        for (let i = 0; i < pending.length; i += this.concurrency) {
          await Promise.all(pending.slice(i, i + this.concurrency).map(async (jwt) => {
            const outcome = await this.validate(index, book, jwt);
            bump(counts, outcomeLabel(outcome));
          }));
        }
      }
    }
    return Object.fromEntries(counts);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const index = this.turn++ % this.books.length;
      const book = this.books[index] as LicenseBook;
      let failed: boolean;
      if (book.accessToken === null) {
        failed = !(await this.getToken(book));
      } else {
        const jwt = book.spare.pop() ?? await this.signToken(book);
        if (jwt === null) failed = true;
        else {
          const outcome = await this.validate(index, book, jwt);
          failed = outcome.kind !== 'answer' || outcome.status >= 500;
        }
      }
      if (failed) await sleep(this.errorPauseMs);
      else if (this.pauseMs > 0) await sleep(this.pauseMs);
    }
  }

  private async getToken(book: LicenseBook): Promise<boolean> {
    const { licenseKey, password } = book.lic;
    const o = await call(this.target(), 'POST', '/api/v1/auth/get-token', { licenseKey, password, imzaTipi: 0 }, {}, this.timeoutMs);
    if (o.kind !== 'answer' || o.status !== 200) {
      bump(book.mintFailures, outcomeLabel(o));
      return false;
    }
    book.accessToken = o.body.accessToken as string;
    book.spare.push(o.body.signToken as string);
    book.minted.add(claimsOf(o.body.signToken as string).token_id);
    return true;
  }

  private async signToken(book: LicenseBook): Promise<string | null> {
    const o = await call(this.target(), 'POST', '/api/v1/auth/sign-token', { imzaTipi: 0 },
      { authorization: `Bearer ${book.accessToken}` }, this.timeoutMs);
    if (o.kind !== 'answer' || o.status !== 200) {
      bump(book.mintFailures, outcomeLabel(o));
      return null;
    }
    const jwt = o.body.signToken as string;
    book.minted.add(claimsOf(jwt).token_id);
    return jwt;
  }

  private async validate(index: number, book: LicenseBook, jwt: string): Promise<Outcome> {
    const tokenId = claimsOf(jwt).token_id;
    const retry = book.unsettled.has(tokenId);
    const o = await call(this.target(), 'POST', '/api/license/validate', { token: jwt }, {}, this.timeoutMs);
    this.timeline.push({ at: Date.now(), license: index, outcome: outcomeLabel(o) });
    if (o.kind === 'answer' && o.status === 200) {
      if (book.ok.has(tokenId)) book.doubles.push(tokenId);
      book.ok.add(tokenId);
      book.usedQuotas.push(Number(o.body?.usedQuota));
      book.unsettled.delete(tokenId);
      return o;
    }
    bump(book.others, outcomeLabel(o));
    if (o.kind !== 'answer' || o.status >= 500) {
      book.lost.add(tokenId);
      book.unsettled.set(tokenId, jwt);
    } else if (retry) {
      book.unsettled.delete(tokenId);
      if (o.status === 400 && o.body?.message === MSG.USED) book.retriedUsed.add(tokenId);
    }
    return o;
  }
}

// ---- the books -----------------------------------------------------------------------------

/** The assertions checkBooks makes (a tap Test). */
export type Checks = Pick<Test, 'ok' | 'equal' | 'same' | 'fail'>;

export interface BooksOptions {
  /**
   * true: no answer was lost, so the validate 200s equal the 'used' rows. false (answers lost,
   * e.g. a server killed): rows >= 200s, and every 'used' row is a token answered 200 or
   * whose answer was lost. Either way rows = licenses.used_quota = Redis 'u'.
   */
  exact: boolean;
  /** how long the usage streams may take to empty, default 30 s */
  drainTimeoutMs?: number;
}

/**
 * Waits until the usage streams are empty, then per license: validate 200s vs sign_tokens
 * 'used' rows = licenses.used_quota = the Redis license hash's 'u'; no token answered 200
 * twice; every token answered 200 is 'used' in Postgres; every minted token has its row;
 * every retried token found "already used" is 'used'; no dead letters.
 */
export async function checkBooks(t: Checks, stack: Stack, load: Load, options: BooksOptions): Promise<void> {
  const drainMs = options.drainTimeoutMs ?? 30_000;
  if (!(await stack.drained(drainMs))) {
    t.fail(`the usage streams empty within ${drainMs} ms`, await stack.streamState());
  }
  t.equal(await stack.deadLetters(), 0, 'no usage event dead-lettered');
  const firmaIds = load.books.map((b) => b.lic.firmaId);
  const rows = await stack.sql<{ token_id: string; firma_id: string; status: string }[]>`
    select token_id, firma_id, status from sign_tokens where firma_id = any(${firmaIds})`;
  const licenses = await stack.sql<{ firma_id: string; used_quota: number }[]>`
    select firma_id, used_quota::int as used_quota from licenses where firma_id = any(${firmaIds})`;
  const usedQuota = new Map(licenses.map((l) => [l.firma_id, l.used_quota]));
  for (const [i, book] of load.books.entries()) {
    const name = `license ${i}`;
    const mine = rows.filter((r) => r.firma_id === book.lic.firmaId);
    const used = new Set(mine.filter((r) => r.status === 'used').map((r) => r.token_id));
    const all = new Set(mine.map((r) => r.token_id));
    const redisU = await stack.redisClient.hget(stack.keys.forLicense(book.lic.firmaId).license, 'u');
    const counts = { ok: book.ok.size, usedRows: used.size, lost: book.lost.size, retriedUsed: book.retriedUsed.size };
    if (options.exact) {
      t.same([book.lost.size, book.mintFailures.size], [0, 0], `${name}: no validate answer lost, no mint failed (exact books)`, counts);
      t.equal(book.ok.size, used.size, `${name}: validate 200s = 'used' rows in sign_tokens`, counts);
      t.equal(all.size, book.minted.size, `${name}: sign_tokens rows = tokens minted`);
    } else {
      t.ok(used.size >= book.ok.size, `${name}: 'used' rows (${used.size}) >= validate 200s (${book.ok.size})`, counts);
    }
    t.equal(usedQuota.get(book.lic.firmaId), used.size, `${name}: licenses.used_quota = 'used' rows`, counts);
    t.equal(redisU === null ? null : Number(redisU), used.size, `${name}: Redis license 'u' = 'used' rows`, counts);
    t.same(book.doubles, [], `${name}: no token answered 200 twice`);
    t.same(new Set(book.usedQuotas).size, book.usedQuotas.length, `${name}: every 200 reported a usedQuota of its own`);
    t.same([...book.ok].filter((id) => !used.has(id)), [], `${name}: every token answered 200 is 'used' in Postgres`);
    const unexplained = [...used].filter((id) => !book.ok.has(id) && (options.exact || !book.lost.has(id)));
    t.same(unexplained, [], options.exact
      ? `${name}: every 'used' row is a token answered 200`
      : `${name}: every 'used' row is a token answered 200 or whose answer was lost`);
    t.same([...book.retriedUsed].filter((id) => !used.has(id)), [],
      `${name}: every retried token found already used is 'used' in Postgres`);
    t.same([...book.minted].filter((id) => !all.has(id)), [], `${name}: every minted token is in sign_tokens`);
    if (!options.exact && book.unsettled.size === 0) {
      t.equal(used.size, book.ok.size + book.retriedUsed.size,
        `${name}: every lost answer settled: 'used' rows = 200s + retried tokens found already used`, counts);
    }
  }
}
