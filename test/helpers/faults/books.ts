import type { Test } from 'tap';
import type { Load } from './load.js';
import type { FaultLicense, Stack } from './stack.js';
import { timedCall } from '../http.js';
import { LicenseField } from '../../../src/redis/fields.js';

// The books ("the books balance through every failure"): checkBooks compares the client's
// side (a Load) with Postgres and Redis once the usage streams are empty; checkExactBooks and
// checkLossBooks are the books of Redis faults, the latter where Redis loses data (which
// cannot balance exactly: the lost events are lost). Each ends with checkLedger: the ledger,
// the daily totals and the packages sum to the license's figures in Postgres.

/** The assertions checkBooks makes (a tap Test). */
export type Checks = Pick<Test, 'ok' | 'equal' | 'same' | 'fail' | 'comment'>;

export interface BooksOptions {
  /**
   * true: no answer was lost, so the validate 200s equal the 'used' rows. false (answers lost,
   * e.g. a server killed): rows >= 200s, and every 'used' row is a token answered 200 or
   * whose answer was lost. Either way rows = licenses.used_quota = Redis 'u'.
   */
  exact: boolean;
  /** how long the usage streams may take to empty, default 30 s */
  drainTimeoutMs?: number;
  /**
   * when Redis came back as a new server (a restart, a failover: src/redis/restarts.ts):
   * tokens issued before it are refused as used without being spent, so a retry of one may
   * find it "already used" with no 'used' row
   */
  fencedAt?: number;
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
  const rows = await stack.sql<{ token_id: string; firma_id: string; status: string; issued_ms: number }[]>`
    select token_id, firma_id, status, (extract(epoch from issued_at) * 1000)::float8 as issued_ms
    from sign_tokens where firma_id = any(${firmaIds})`;
  const issuedMs = new Map(rows.map((r) => [r.token_id, r.issued_ms]));
  const fenced = (id: string): boolean => options.fencedAt !== undefined && (issuedMs.get(id) ?? Infinity) < options.fencedAt;
  const licenses = await stack.sql<{ firma_id: string; used_quota: number }[]>`
    select firma_id, used_quota::int as used_quota from licenses where firma_id = any(${firmaIds})`;
  const usedQuota = new Map(licenses.map((l) => [l.firma_id, l.used_quota]));
  for (const [i, book] of load.books.entries()) {
    const name = `license ${i}`;
    const mine = rows.filter((r) => r.firma_id === book.lic.firmaId);
    const used = new Set(mine.filter((r) => r.status === 'used').map((r) => r.token_id));
    const all = new Set(mine.map((r) => r.token_id));
    const redisU = await stack.redisClient.hget(stack.keys.forLicense(book.lic.firmaId).license, LicenseField.usedQuota);
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
    t.same([...book.retriedUsed].filter((id) => !used.has(id) && !fenced(id)), [], options.fencedAt === undefined
      ? `${name}: every retried token found already used is 'used' in Postgres`
      : `${name}: every retried token found already used is 'used' in Postgres, or was issued before Redis came back (refused by the fence)`);
    const retriedSpent = [...book.retriedUsed].filter((id) => used.has(id)).length;
    t.same([...book.minted].filter((id) => !all.has(id)), [], `${name}: every minted token is in sign_tokens`);
    if (!options.exact && book.unsettled.size === 0) {
      t.equal(used.size, book.ok.size + retriedSpent,
        `${name}: every lost answer settled: 'used' rows = 200s + retried tokens found already used and spent`, counts);
    }
  }
  await checkLedger(t, stack, firmaIds);
}

// ---- the ledger ----------------------------------------------------------------------------

/** A license's figures and what its ledger, daily totals and packages sum to (sql/010_packages_ledger.sql). */
interface LedgerFigures {
  firma_id: string;
  total_quota: number;
  used_quota: number;
  forfeited_quota: number;
  /** Σ license_ledger.amount, every kind */
  ledger: number;
  /** Σ license_daily_usage.redeemed */
  redeemed: number;
  /** ledger 'release' entries (a unit given back: none are written yet) */
  releases: number;
  /** Σ (license_packages.amount - forfeited) */
  bought: number;
  /** Σ license_packages.used */
  package_used: number;
  /** Σ license_packages.forfeited */
  package_forfeited: number;
}

/**
 * Once the usage streams are empty, per license: the ledger sums to licenses.total_quota;
 * the daily totals less the releases to licenses.used_quota; the packages' amounts less
 * their forfeits to total_quota, their spends to used_quota, their forfeits to
 * forfeited_quota. A failure shows the license's figures.
 */
export async function checkLedger(t: Checks, stack: Stack, firmaIds: string[]): Promise<void> {
  const figures = await stack.sql<LedgerFigures[]>`
    select l.firma_id, l.total_quota::float8 as total_quota, l.used_quota::float8 as used_quota,
           l.forfeited_quota::float8 as forfeited_quota,
           (select coalesce(sum(e.amount), 0)::float8 from license_ledger e where e.firma_id = l.firma_id) as ledger,
           (select coalesce(sum(d.redeemed), 0)::float8 from license_daily_usage d where d.firma_id = l.firma_id) as redeemed,
           (select count(*)::float8 from license_ledger e where e.firma_id = l.firma_id and e.kind = 'release') as releases,
           (select coalesce(sum(p.amount - p.forfeited), 0)::float8 from license_packages p where p.firma_id = l.firma_id) as bought,
           (select coalesce(sum(p.used), 0)::float8 from license_packages p where p.firma_id = l.firma_id) as package_used,
           (select coalesce(sum(p.forfeited), 0)::float8 from license_packages p where p.firma_id = l.firma_id) as package_forfeited
    from licenses l where l.firma_id = any(${firmaIds}) order by l.firma_id`;
  t.equal(figures.length, new Set(firmaIds).size, 'the ledger check: every license found in Postgres');
  for (const f of figures) {
    const name = `license ${f.firma_id}`;
    const shown = { ...f };
    t.equal(f.ledger, f.total_quota, `${name}: Σ ledger amounts = total_quota`, shown);
    t.equal(f.redeemed - f.releases, f.used_quota, `${name}: Σ daily redeemed - releases = used_quota`, shown);
    t.equal(f.bought, f.total_quota, `${name}: Σ package (amount - forfeited) = total_quota`, shown);
    t.equal(f.package_used, f.used_quota, `${name}: Σ package used = used_quota`, shown);
    t.equal(f.package_forfeited, f.forfeited_quota, `${name}: Σ package forfeited = forfeited_quota`, shown);
  }
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
  const u = await stack.redisClient.hget(stack.keys.forLicense(firmaId).license, LicenseField.usedQuota);
  return { pgUsed: lic?.used ?? -1, rows: counts?.rows ?? 0, usedRows: counts?.used ?? 0, redisU: u === null ? null : Number(u) };
}

/**
 * licenseState once the license has been used again: after Redis lost data, the worker's
 * acknowledgement of a batch it wrote across the loss drops a copy rebuilt before it that
 * counts less than Postgres then does (lua/ack.lua), and only the next request rebuilds it.
 * So where no copy is left, a check-quota (as a client would) rebuilds it first; its answer
 * must show the same count. `checkQuotaUsed`: what check-quota showed, null when no call was needed.
 */
export async function licenseStateInUse(stack: Stack, lic: FaultLicense): Promise<LicenseState & { checkQuotaUsed: number | null }> {
  const state = await licenseState(stack, lic.firmaId);
  if (state.redisU !== null) return { ...state, checkQuotaUsed: null };
  const quota = (await timedCall(stack.url(), 'GET', `/api/License/check-quota/${lic.licenseKey}`)).outcome;
  const body = quota.kind === 'answer' ? quota.body as { data?: { usedQuota?: number } } | null : null;
  const checkQuotaUsed = body?.data?.usedQuota ?? -1;
  return { ...(await licenseState(stack, lic.firmaId)), checkQuotaUsed };
}

/**
 * The books of a fault where Redis kept its data (stopped with persistence, paused):
 * checkBooks once the lost answers were retried, and then exactly: no refused call spent
 * anything. Every 503'd token redeemed on retry (none was found already used), so the
 * 'used' rows are exactly the 200s; and every sign_tokens row is a token a client received
 * (no refused sign-token or get-token issued one). `spentInFlight`: how many refused
 * validates may have been spent all the same, being in flight when the connection to Redis
 * dropped or Redis stopped (the script ran, its answer was lost with the connection or not
 * yet written); each must then be 'used' in Postgres, which checkBooks checks. `droppedAt`:
 * when Redis stopped answering (from the signal to Redis's exit, or to its pause): a sign-token or get-token in flight then may
 * have issued its token all the same, its answer lost; such a token may only be 'issued',
 * at that time, never spent.
 */
export async function checkExactBooks(
  t: Checks, stack: Stack, load: Load, spentInFlight = 0, droppedAt?: { from: number; to: number }, fencedAt?: number,
): Promise<void> {
  await checkBooks(t, stack, load, { exact: false, drainTimeoutMs: 20_000, ...(fencedAt === undefined ? {} : { fencedAt }) });
  const firmaIds = load.books.map((b) => b.lic.firmaId);
  const rows = await stack.sql<{ token_id: string; firma_id: string; status: string; issued_ms: number }[]>`
    select token_id, firma_id, status, (extract(epoch from issued_at) * 1000)::float8 as issued_ms
    from sign_tokens where firma_id = any(${firmaIds})`;
  const inFlight = (r: (typeof rows)[number]): boolean =>
    droppedAt !== undefined && r.status === 'issued' && r.issued_ms >= droppedAt.from && r.issued_ms <= droppedAt.to;
  const usedRows = new Set(rows.filter((r) => r.status === 'used').map((r) => r.token_id));
  // a token the fence refused spent nothing: only those with a 'used' row were spent in flight
  const spent = load.books.reduce((n, b) => n + [...b.retriedUsed].filter((id) => usedRows.has(id)).length, 0);
  if (spentInFlight === 0) t.equal(spent, 0, 'no refused validate had spent its token (no retry found it already used)');
  else t.ok(spent <= spentInFlight, `at most the ${spentInFlight} validates in flight when Redis went away had spent their token (${spent})`);
  for (const [i, book] of load.books.entries()) {
    t.equal(book.unsettled.size, 0, `license ${i}: every refused validate was retried to an answer`);
    const issuedUnseen = rows.filter((r) => r.firma_id === book.lic.firmaId && !book.minted.has(r.token_id) && !inFlight(r)).map((r) => r.token_id);
    t.same(issuedUnseen, [], `license ${i}: every sign_tokens row is a token a client received (refused mints issued nothing)`);
  }
}

// ---- Redis lost ----------------------------------------------------------------------------

/**
 * The books after Redis lost data, once the streams are empty: per license 'used' rows =
 * licenses.used_quota = Redis 'u' (of the copy in use: licenseStateInUse); no token answered 200 twice; every 'used' row a token
 * answered 200 or whose answer was lost; and the redemptions answered 200 that Postgres
 * does not have are exactly `expectedLost` when given. Resolves with those.
 */
export async function checkLossBooks(t: Checks, stack: Stack, load: Load, expectedLost: Set<string> | null): Promise<Set<string>> {
  if (!(await stack.drained(20_000))) t.fail('the usage streams empty within 20 s', await stack.streamState());
  t.equal(await stack.deadLetters(), 0, 'no usage event dead-lettered');
  const lost = new Set<string>();
  for (const [i, book] of load.books.entries()) {
    const name = `license ${i}`;
    const state = await licenseStateInUse(stack, book.lic);
    if (state.checkQuotaUsed !== null) t.equal(state.checkQuotaUsed, state.usedRows, `${name}: check-quota, which rebuilt the copy the worker dropped, shows the 'used' rows`);
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
  await checkLedger(t, stack, load.books.map((b) => b.lic.firmaId));
  if (expectedLost === null) return lost;
  t.same([...lost].filter((id) => !expectedLost.has(id)), [],
    'every redemption answered 200 and missing from Postgres was queued in the streams when Redis was lost');
  t.same([...expectedLost].filter((id) => !lost.has(id)), [],
    'every redemption queued and unpersisted when Redis was lost was answered 200 and is missing from Postgres');
  return lost;
}
