import { readdir, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import { claimsOf, sleep } from './durable.js';
import { checkBooks, type Checks, type FaultLicense, type Load, type Outcome, type Stack } from './faults.js';
import { MSG } from './validate.js';

// Helpers of the Redis fault scenarios (test/faults/redis.*.test.ts): requests timed and
// with their Retry-After, a probe license kept out of the load to show that refused calls
// spend nothing, the usage streams read at the moment Redis is lost, and the books of a
// scenario where Redis loses data (which cannot balance exactly: the lost events are lost).

export const UNAVAILABLE = 'Hizmet geçici olarak kullanılamıyor';

// ---- timed requests ------------------------------------------------------------------------

export interface Timed {
  outcome: Outcome;
  /** from sending to the whole body read */
  ms: number;
  retryAfter: string | null;
  /** Date.now() when sent */
  sentAt: number;
}

/** One request, timed, with its Retry-After header; never throws. */
export async function timedCall(
  base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 5000,
): Promise<Timed> {
  const sentAt = Date.now();
  const started = performance.now();
  let retryAfter: string | null = null;
  let outcome: Outcome;
  try {
    const res = await fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    retryAfter = res.headers.get('retry-after');
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    outcome = { kind: 'answer', status: res.status, body: parsed, text };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    outcome = e.name === 'TimeoutError' || e.name === 'AbortError'
      ? { kind: 'timeout' }
      : { kind: 'noAnswer', error: e.cause?.code ?? e.cause?.message ?? e.message };
  }
  return { outcome, ms: Math.round(performance.now() - started), retryAfter, sentAt };
}

// ---- the probe license ---------------------------------------------------------------------

export const ENDPOINTS = ['validate', 'get-token', 'sign-token', 'check-quota'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

/** A license no load touches: one get-token before the fault, and its sign token kept unused. */
export interface Probe {
  lic: FaultLicense;
  accessToken: string;
  signToken: string;
  tokenId: string;
}

export async function makeProbe(stack: Stack, lic: FaultLicense): Promise<Probe> {
  const got = await stack.request('POST', '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 });
  if (got.kind !== 'answer' || got.status !== 200) throw new Error(`probe get-token: ${JSON.stringify(got)}`);
  const signToken = got.body.signToken as string;
  return { lic, accessToken: got.body.accessToken as string, signToken, tokenId: claimsOf(signToken).token_id };
}

/** The four public endpoints of the probe license at once, each timed. */
export async function probeRound(stack: Stack, probe: Probe, timeoutMs = 5000): Promise<Record<Endpoint, Timed>> {
  const base = stack.url();
  const [validate, getToken, signToken, checkQuota] = await Promise.all([
    timedCall(base, 'POST', '/api/license/validate', { token: probe.signToken }, {}, timeoutMs),
    timedCall(base, 'POST', '/api/v1/auth/get-token',
      { licenseKey: probe.lic.licenseKey, password: probe.lic.password, imzaTipi: 0 }, {}, timeoutMs),
    timedCall(base, 'POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, { authorization: `Bearer ${probe.accessToken}` }, timeoutMs),
    timedCall(base, 'GET', `/api/License/check-quota/${probe.lic.licenseKey}`, undefined, {}, timeoutMs),
  ]);
  return { validate, 'get-token': getToken, 'sign-token': signToken, 'check-quota': checkQuota };
}

/**
 * Waits until the service answers check-quota of a license with 200 (it has reconnected to
 * Redis); resolves with the ms it took, -1 if it did not within timeoutMs.
 */
export async function untilServing(stack: Stack, licenseKey: string, timeoutMs = 10_000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    const o = (await timedCall(stack.url(), 'GET', `/api/License/check-quota/${licenseKey}`)).outcome;
    if (o.kind === 'answer' && o.status === 200) return Date.now() - started;
    await sleep(20);
  }
  return -1;
}

/** Probe rounds back to back while `during()` holds (a round is started only then). */
export async function probeWhile(stack: Stack, probe: Probe, during: () => boolean): Promise<Record<Endpoint, Timed>[]> {
  const rounds: Record<Endpoint, Timed>[] = [];
  while (during()) {
    rounds.push(await probeRound(stack, probe));
    await sleep(100);
  }
  return rounds;
}

/**
 * Validates the tokens over and over, `concurrency` at a time, while `during()` holds (a
 * request is sent only then): clients whose redemptions meet the fault.
 */
export async function validateWhile(stack: Stack, tokens: string[], during: () => boolean, concurrency = 8): Promise<Timed[]> {
  const out: Timed[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (during()) {
      const jwt = tokens[next++ % tokens.length] as string;
      out.push(await timedCall(stack.url(), 'POST', '/api/license/validate', { token: jwt }));
    }
  }));
  return out;
}

/** What an answer looks like, for a message: status, body with check-quota's timestamp checked and dropped, Retry-After. */
export function seen(timed: Timed): Record<string, unknown> {
  const o = timed.outcome;
  if (o.kind !== 'answer') return { outcome: o.kind };
  const body = o.body !== null && typeof o.body === 'object' ? { ...o.body } : o.body;
  if (body && typeof body === 'object' && 'timestamp' in body) {
    body.timestamp = !Number.isNaN(Date.parse(String(body.timestamp))) ? 'ISO' : body.timestamp;
  }
  return { status: o.status, body, retryAfter: timed.retryAfter };
}

/** The published 503 of each endpoint (validate: message; get-token, sign-token: code; check-quota: code and timestamp). */
export function expected503(endpoint: Endpoint): Record<string, unknown> {
  const coded = { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: UNAVAILABLE } };
  const body = endpoint === 'validate' ? { success: false, message: UNAVAILABLE }
    : endpoint === 'check-quota' ? { ...coded, timestamp: 'ISO' } : coded;
  return { status: 503, body, retryAfter: 'whole seconds >= 1' };
}

/** seen(), with a Retry-After of whole seconds >= 1 written as expected503 writes it. */
export function seen503(timed: Timed): Record<string, unknown> {
  const out = seen(timed);
  if (timed.retryAfter !== null && /^[1-9]\d*$/.test(timed.retryAfter)) out.retryAfter = 'whole seconds >= 1';
  return out;
}

export interface LatencySummary {
  n: number;
  min: number;
  p50: number;
  max: number;
}

export function summarize(values: number[]): LatencySummary {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { n: sorted.length, min: sorted[0] ?? NaN, p50: at(0.5), max: sorted[sorted.length - 1] ?? NaN };
}

/**
 * Every probe answer of the rounds is the endpoint's published 503 with Retry-After,
 * within maxMs. Returns the latencies per endpoint.
 */
export function check503s(t: Checks, rounds: Record<Endpoint, Timed>[], maxMs: number, when: string): Record<Endpoint, LatencySummary> {
  const out = {} as Record<Endpoint, LatencySummary>;
  for (const endpoint of ENDPOINTS) {
    const all = rounds.map((r) => r[endpoint]);
    const wrong = all.filter((x) => JSON.stringify(seen503(x)) !== JSON.stringify(expected503(endpoint)));
    t.same(wrong.map(seen503), [], `${when}: ${endpoint} answered the published 503 with Retry-After (${all.length} probes)`,
      { expected: expected503(endpoint) });
    const slow = all.filter((x) => x.ms > maxMs).map((x) => x.ms);
    t.same(slow, [], `${when}: ${endpoint} answered within ${maxMs} ms`);
    out[endpoint] = summarize(all.map((x) => x.ms));
  }
  return out;
}

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

// ---- Postgres and Redis state of a license -------------------------------------------------

export interface LicenseState {
  /** licenses.used_quota */
  pgUsed: number;
  /** sign_tokens rows, any status */
  rows: number;
  usedRows: number;
  /** the Redis license hash's 'u' (null: no copy) */
  redisU: number | null;
}

export async function licenseState(stack: Stack, firmaId: string): Promise<LicenseState> {
  const [lic] = await stack.sql<{ used: number }[]>`select used_quota::int as used from licenses where firma_id = ${firmaId}`;
  const [counts] = await stack.sql<{ rows: number; used: number }[]>`
    select count(*)::int as rows, (count(*) filter (where status = 'used'))::int as used from sign_tokens where firma_id = ${firmaId}`;
  const u = await stack.redisClient.hget(stack.keys.forLicense(firmaId).license, 'u');
  return { pgUsed: lic?.used ?? -1, rows: counts?.rows ?? 0, usedRows: counts?.used ?? 0, redisU: u === null ? null : Number(u) };
}

/**
 * The books of a fault where Redis kept its data (stopped with persistence, paused):
 * checkBooks once the lost answers were retried, and then exactly: no refused call spent
 * anything. Every 503'd token redeemed on retry (none was found already used), so the
 * 'used' rows are exactly the 200s; and every sign_tokens row is a token a client received
 * (no refused sign-token or get-token issued one). `spentInFlight`: how many refused
 * validates may have been spent all the same, being in flight when the connection to Redis
 * dropped (the script ran, its answer was lost with the connection); each must then be
 * 'used' in Postgres, which checkBooks checks.
 */
export async function checkExactBooks(t: Checks, stack: Stack, load: Load, spentInFlight = 0): Promise<void> {
  await checkBooks(t, stack, load, { exact: false, drainTimeoutMs: 20_000 });
  const firmaIds = load.books.map((b) => b.lic.firmaId);
  const rows = await stack.sql<{ token_id: string; firma_id: string }[]>`
    select token_id, firma_id from sign_tokens where firma_id = any(${firmaIds})`;
  const spent = load.books.reduce((n, b) => n + b.retriedUsed.size, 0);
  if (spentInFlight === 0) t.equal(spent, 0, 'no refused validate had spent its token (no retry found it already used)');
  else t.ok(spent <= spentInFlight, `at most the ${spentInFlight} validates in flight when Redis went away had spent their token (${spent})`);
  for (const [i, book] of load.books.entries()) {
    t.equal(book.unsettled.size, 0, `license ${i}: every refused validate was retried to an answer`);
    const issuedUnseen = rows.filter((r) => r.firma_id === book.lic.firmaId && !book.minted.has(r.token_id)).map((r) => r.token_id);
    t.same(issuedUnseen, [], `license ${i}: every sign_tokens row is a token a client received (refused mints issued nothing)`);
  }
}

/** Failed get-tokens counted against client addresses (lua/failures.lua), summed over addresses. */
export async function failedLoginSlots(stack: Stack): Promise<number> {
  let total = 0;
  let cursor = '0';
  do {
    const [next, keys] = await stack.redisClient.scan(cursor, 'MATCH', `${stack.prefix}:{a:*}:fg`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) total += Number(await stack.redisClient.get(key) ?? 0);
  } while (cursor !== '0');
  return total;
}

// ---- Redis lost ----------------------------------------------------------------------------

/** Token ids of the redemptions ('u' events) in the usage streams, read now. */
export async function queuedRedemptions(stack: Stack): Promise<Set<string>> {
  const out = new Set<string>();
  for (const stream of stack.keys.streams) {
    const entries = await stack.redisClient.xrange(stream, '-', '+');
    for (const [, fields] of entries) {
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string;
      if (f.k === 'u' && f.t) out.add(f.t);
    }
  }
  return out;
}

/** Of these token ids, those that are 'used' in Postgres now. */
export async function usedInPostgres(stack: Stack, tokenIds: Iterable<string>): Promise<Set<string>> {
  const ids = [...tokenIds];
  if (ids.length === 0) return new Set();
  const rows = await stack.sql<{ token_id: string }[]>`
    select token_id from sign_tokens where token_id = any(${ids}) and status = 'used'`;
  return new Set(rows.map((r) => r.token_id));
}

/**
 * Stops every write to the private Redis (CLIENT PAUSE WRITE: scripts wait, reads go on),
 * reads the redemptions queued in its streams, then SIGKILLs it: what was queued at the
 * moment of the kill, exactly, since nothing could be written in between.
 */
export async function killFrozen(stack: Stack): Promise<{ queued: Set<string>; killedAt: number }> {
  await stack.redis.cli('client', 'pause', '10000', 'write');
  const queued = await queuedRedemptions(stack);
  await stack.redis.signal('SIGKILL');
  return { queued, killedAt: Date.now() };
}

/** Validates each token (concurrency 16); resolves with the outcomes counted by label, and the 200s. */
export async function validateAll(stack: Stack, tokens: string[]): Promise<{ counts: Record<string, number>; ok: string[]; wrong: unknown[] }> {
  const counts: Record<string, number> = {};
  const ok: string[] = [];
  const wrong: unknown[] = [];
  for (let i = 0; i < tokens.length; i += 16) {
    await Promise.all(tokens.slice(i, i + 16).map(async (jwt) => {
      const o = await stack.request('POST', '/api/license/validate', { token: jwt });
      const label = o.kind === 'answer'
        ? o.status === 400 && o.body?.message === MSG.USED && Object.keys(o.body).length === 2 && o.body.success === false
          ? 'used' : String(o.status)
        : o.kind;
      counts[label] = (counts[label] ?? 0) + 1;
      if (label === '200') ok.push(claimsOf(jwt).token_id);
      if (label !== 'used') wrong.push(o.kind === 'answer' ? { status: o.status, body: o.body } : o);
    }));
  }
  return { counts, ok, wrong };
}

/** n sign tokens of a license through sign-token (its access token from get-token). */
export async function mintHeld(stack: Stack, lic: FaultLicense, n: number): Promise<string[]> {
  const got = await stack.request('POST', '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 });
  if (got.kind !== 'answer' || got.status !== 200) throw new Error(`get-token: ${JSON.stringify(got)}`);
  const out = [got.body.signToken as string];
  while (out.length < n) {
    const o = await stack.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, { authorization: `Bearer ${got.body.accessToken}` });
    if (o.kind !== 'answer' || o.status !== 200) throw new Error(`sign-token: ${JSON.stringify(o)}`);
    out.push(o.body.signToken as string);
  }
  return out;
}

/**
 * Samples Postgres's used_quota and then Redis's 'u' of each license (in that order: both
 * only grow, so a Redis copy that holds every persisted redemption is never read below
 * Postgres) every intervalMs until stopped; records every sample where Redis was below.
 */
export class CountWatch {
  readonly below: { at: number; license: number; pgUsed: number; redisU: number | null }[] = [];
  samples = 0;
  private running = true;
  private readonly done: Promise<void>;

  constructor(private readonly stack: Stack, private readonly firmaIds: string[], intervalMs = 100) {
    this.done = (async () => {
      while (this.running) {
        await this.sample().catch(() => {});
        await sleep(intervalMs);
      }
    })();
  }

  private async sample(): Promise<void> {
    const rows = await this.stack.sql<{ firma_id: string; used: number }[]>`
      select firma_id, used_quota::int as used from licenses where firma_id = any(${this.firmaIds})`;
    const pg = new Map(rows.map((r) => [r.firma_id, r.used]));
    const redis = await Promise.all(this.firmaIds.map((f) => this.stack.redisClient.hget(this.stack.keys.forLicense(f).license, 'u')));
    this.samples++;
    for (const [i, firmaId] of this.firmaIds.entries()) {
      const u = redis[i];
      const pgUsed = pg.get(firmaId) ?? 0;
      // no copy yet: the next request hydrates it from Postgres
      if (u === null || u === undefined) continue;
      if (Number(u) < pgUsed) this.below.push({ at: Date.now(), license: i, pgUsed, redisU: Number(u) });
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

/**
 * The books after Redis lost data, once the streams are empty: per license 'used' rows =
 * licenses.used_quota = Redis 'u'; no token answered 200 twice; every 'used' row a token
 * answered 200 or whose answer was lost; and the redemptions answered 200 that Postgres
 * does not have are exactly `expectedLost` when given. Resolves with those.
 */
export async function checkLossBooks(t: Checks, stack: Stack, load: Load, expectedLost: Set<string> | null): Promise<Set<string>> {
  if (!(await stack.drained(20_000))) t.fail('the usage streams empty within 20 s', await stack.streamState());
  t.equal(await stack.deadLetters(), 0, 'no usage event dead-lettered');
  const lost = new Set<string>();
  for (const [i, book] of load.books.entries()) {
    const name = `license ${i}`;
    const state = await licenseState(stack, book.lic.firmaId);
    const rows = await stack.sql<{ token_id: string }[]>`
      select token_id from sign_tokens where firma_id = ${book.lic.firmaId} and status = 'used'`;
    const used = new Set(rows.map((r) => r.token_id));
    t.equal(state.pgUsed, state.usedRows, `${name}: licenses.used_quota = 'used' rows`, { ...state });
    t.equal(state.redisU, state.usedRows, `${name}: Redis license 'u' = 'used' rows`, { ...state });
    t.same(book.doubles, [], `${name}: no token answered 200 twice`);
    t.same([...used].filter((id) => !book.ok.has(id) && !book.lost.has(id)), [],
      `${name}: every 'used' row is a token answered 200 or whose answer was lost`);
    for (const id of book.ok) if (!used.has(id)) lost.add(id);
  }
  if (expectedLost === null) return lost;
  t.same([...lost].filter((id) => !expectedLost.has(id)), [],
    'every redemption answered 200 and missing from Postgres was queued in the streams when Redis was lost');
  t.same([...expectedLost].filter((id) => !lost.has(id)), [],
    'every redemption queued and unpersisted when Redis was lost was answered 200 and is missing from Postgres');
  return lost;
}

// ---- AOF -----------------------------------------------------------------------------------

/** The incremental AOF file the private Redis appends to (Redis 7: appendonlydir/*.incr.aof), and its size. */
export async function incrAof(dir: string): Promise<{ file: string; size: number } | null> {
  const aofDir = path.join(dir, 'appendonlydir');
  const names = await readdir(aofDir).catch(() => [] as string[]);
  const incr = names.filter((n) => n.endsWith('.incr.aof')).sort((a, b) => Number(/\.(\d+)\.incr\.aof$/.exec(a)?.[1]) - Number(/\.(\d+)\.incr\.aof$/.exec(b)?.[1]));
  const last = incr[incr.length - 1];
  if (last === undefined) return null;
  const file = path.join(aofDir, last);
  return { file, size: (await stat(file)).size };
}

/** The incremental AOF's size every intervalMs, to know what the file held a while ago. */
export class AofSizes {
  readonly samples: { at: number; file: string; size: number }[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(dir: string, intervalMs = 20) {
    this.done = (async () => {
      while (this.running) {
        const aof = await incrAof(dir).catch(() => null);
        if (aof) this.samples.push({ at: Date.now(), ...aof });
        await sleep(intervalMs);
      }
    })();
  }

  /** The last sample taken at or before `at`. */
  before(at: number): { at: number; file: string; size: number } | undefined {
    return this.samples.filter((s) => s.at <= at).at(-1);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

/** Cuts a file back to `size` bytes (what a power failure leaves of a file written since its last fsync). */
export async function truncateTo(file: string, size: number): Promise<void> {
  await truncate(file, size);
}
