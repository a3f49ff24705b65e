import type { Test } from 'tap';
import { LicenseField } from '../../src/redis/fields.js';
import { adminView } from './admin.js';
import { ADMIN_TOKEN, type Harness, type TestLicense } from './harness.js';
import type { Answer } from './http.js';
import { claimsOf } from './jwt.js';

// POST /api/license/release as its suites (test/routes/release.*) see it: the call, its
// answers, and the books of a license once the usage worker has written the releases
// (the ledger with its totals, the packages, the audit trail).

export const RELEASE_PATH = '/api/license/release';

export const RELEASE_MSG = {
  RELEASED: 'Token iade edildi, imza kotası geri verildi',
  NOT_REDEEMED: 'Bu token kullanılmamış; iade edilecek imza yok',
  ALREADY_RELEASED: 'Bu token zaten iade edilmiş',
  WINDOW_PASSED: 'İade süresi geçmiş',
  PACKAGE_EXPIRED: 'İmzanın düştüğü paketin süresi dolmuş; iade edilemez',
  OFF: 'Bu lisans için iade kapalı',
  ALLOWANCE_USED: 'Bu lisansın bugünkü iade hakkı doldu',
  KEY_REUSED: 'Bu işlem anahtarı başka bir token için kullanıldı.',
} as const;

/** A release: the body {token, reason} (reason left out when undefined), with an Idempotency-Key when given. */
export function release(h: Harness, token: unknown, reason?: unknown, idempotencyKey?: string): Promise<Answer> {
  const headers: Record<string, string> = idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey };
  return h.request('POST', RELEASE_PATH, reason === undefined ? { token } : { token, reason }, headers);
}

/** The 200 body of a release, exactly. */
export function releasedBody(usedQuota: number, remainingQuota: number): Record<string, unknown> {
  return { success: true, message: RELEASE_MSG.RELEASED, usedQuota, remainingQuota };
}

/** The live used and remaining quota (the admin view, from Redis). */
export async function liveQuota(h: Harness, lic: TestLicense): Promise<[number, number]> {
  const v = await adminView(h, lic.licenseKey);
  return [v.usedQuota as number, v.remainingQuota as number];
}

export interface LedgerItem {
  kind: string; at: string; amount: number; balanceAfter: number | null; packageId: number | null;
  actor: string | null; note: string | null; day: string | null;
}
export interface LedgerTotals {
  purchased: number; corrected: number; forfeited: number; released: number; redeemed: number; totalQuota: number; usedQuota: number;
}

/** GET /admin/v1/licenses/{key}/ledger, every page. */
export async function ledgerOf(h: Harness, lic: TestLicense): Promise<{ items: LedgerItem[]; totals: LedgerTotals }> {
  const items: LedgerItem[] = [];
  let cursor: string | null = null;
  let totals: LedgerTotals | undefined;
  do {
    const query: string = cursor === null ? '' : `?cursor=${encodeURIComponent(cursor)}`;
    const res = await h.request('GET', `/admin/v1/licenses/${lic.licenseKey}/ledger${query}`, undefined, { authorization: `Bearer ${ADMIN_TOKEN}` });
    if (res.status !== 200) throw new Error(`ledger: ${res.status} ${res.text}`);
    items.push(...(res.body.data.items as LedgerItem[]));
    totals = res.body.data.totals as LedgerTotals;
    cursor = res.body.data.nextCursor as string | null;
  } while (cursor !== null);
  return { items, totals: totals as LedgerTotals };
}

export interface Books {
  /** licenses.total_quota, used_quota */
  total: number;
  used: number;
  /** the Redis copy's used count */
  redisUsed: number | null;
  /** Σ license_packages.used, Σ (amount - forfeited) */
  packageUsed: number;
  packageBought: number;
  /** sign_tokens rows by status */
  usedRows: number;
  releasedRows: number;
  /** token_releases rows */
  releases: number;
}

/** A license's figures in Postgres and Redis (read once the worker has drained). */
export async function booksOf(h: Harness, lic: TestLicense): Promise<Books> {
  const [row] = await h.sql<Omit<Books, 'redisUsed'>[]>`
    select l.total_quota::int as total, l.used_quota::int as used,
           (select coalesce(sum(p.used), 0)::int from license_packages p where p.firma_id = l.firma_id) as "packageUsed",
           (select coalesce(sum(p.amount - p.forfeited), 0)::int from license_packages p where p.firma_id = l.firma_id) as "packageBought",
           (select count(*)::int from sign_tokens s where s.firma_id = l.firma_id and s.status = 'used') as "usedRows",
           (select count(*)::int from sign_tokens s where s.firma_id = l.firma_id and s.status = 'released') as "releasedRows",
           (select count(*)::int from token_releases r where r.firma_id = l.firma_id) as releases
    from licenses l where l.firma_id = ${lic.firmaId}`;
  if (row === undefined) throw new Error(`no license ${lic.firmaId}`);
  const u = await h.redis.hget(h.keys.forLicense(lic.firmaId).license, LicenseField.usedQuota);
  return { ...row, redisUsed: u === null ? null : Number(u) };
}

/** The audit trail's status of a token (the view sign_tokens). */
export async function statusOf(h: Harness, token: string): Promise<string | undefined> {
  const [row] = await h.sql<{ status: string }[]>`select status from sign_tokens where token_id = ${claimsOf(token).token_id}`;
  return row?.status;
}

/** Once drained: Postgres used_quota = Redis used = the live figure, and the ledger's totals and the packages sum to it. */
export async function expectExactBooks(t: Test, h: Harness, lic: TestLicense, used: number, released: number): Promise<void> {
  await h.drainWorker(20_000);
  const books = await booksOf(h, lic);
  t.equal(books.used, used, `Postgres used_quota ${used}`);
  t.equal(books.redisUsed, used, `Redis used ${used}`, { hash: await h.redis.hgetall(h.keys.forLicense(lic.firmaId).license) });
  t.equal(books.packageUsed, used, 'Σ license_packages.used = used_quota');
  t.equal(books.packageBought, books.total, 'Σ packages = total_quota');
  t.equal(books.releases, released, `${released} token_releases rows`);
  t.equal(books.releasedRows, released, `${released} sign_tokens released`);
  t.equal(books.usedRows, used, 'sign_tokens used rows = used_quota');
  const { items, totals } = await ledgerOf(h, lic);
  t.equal(items.filter((i) => i.kind === 'release').length, released, `${released} release entries in the ledger`);
  t.equal(totals.released, released, 'totals.released');
  t.equal(totals.usedQuota, totals.redeemed - totals.released, 'usedQuota = redeemed - released');
  t.equal(totals.usedQuota, used, 'the ledger\'s usedQuota is the license\'s');
  t.equal(totals.totalQuota, totals.purchased + totals.corrected - totals.forfeited, 'totalQuota = purchased + corrected - forfeited');
  t.equal(totals.totalQuota, books.total, 'the ledger\'s totalQuota is the license\'s');
}
