import t from 'tap';
import { createRedis } from '../../src/redis/client.js';
import { batchCall, redeemLayout, type Redemption } from '../../src/redis/batchScripts.js';
import { LicenseField as L } from '../../src/redis/fields.js';
import { Outcome } from '../../src/redis/outcomes.js';
import { runScript } from '../../src/redis/scriptCall.js';
import { forfeitOf } from '../../src/usage/events.js';
import { release } from '../helpers/release.js';
import { ADMIN_TOKEN, LIVE_COUNTS, startHarness, type Harness, type TestLicense } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { claimsOf } from '../helpers/jwt.js';
import { spawnWorker } from '../helpers/processes.js';
import { expectCheckQuotaError, expectCodedError, MSG } from '../helpers/shapes.js';
import { mintTokens } from '../helpers/tokens.js';
import { pollUntil, sleep } from '../helpers/wait.js';

// Kontör packages as a user and an operator see them: each purchase is a package with its own
// expiry; redemptions spend the package that expires first (the lower number on a tie); a
// package that expires with units left forfeits them, through the next redemption or, for a
// license nobody uses, through the worker's sweep; the admin License lists the packages, and
// Postgres ends up with the packages, the ledger and the license's figures agreeing.

const ISO = (ms: number) => new Date(ms).toISOString();
const HOUR_MS = 3_600_000;
/** how far ahead a package that a test waits to see expire expires */
const SHORT_MS = 4_000;

interface PgPackage { no: number; amount: number; used: number; forfeited: number; note: string | null; expires_ms: number }
interface LedgerEntry { kind: string; amount: number; package_no: number | null; actor: string; note: string | null }
interface PgLicense { total: number; used: number; forfeited: number }

async function pgPackages(h: Harness, firmaId: string): Promise<PgPackage[]> {
  return [...await h.sql<PgPackage[]>`
    select package_no as no, amount::int as amount, used::int as used, forfeited::int as forfeited, note,
           (extract(epoch from expires_at) * 1000)::float8 as expires_ms
    from license_packages where firma_id = ${firmaId} order by package_no`];
}

async function ledgerOf(h: Harness, firmaId: string): Promise<LedgerEntry[]> {
  return [...await h.sql<LedgerEntry[]>`
    select kind, amount::int as amount, package_no, actor, note from license_ledger where firma_id = ${firmaId} order by id`];
}

async function pgLicense(h: Harness, firmaId: string): Promise<PgLicense | undefined> {
  const [row] = await h.sql<PgLicense[]>`
    select total_quota::int as total, used_quota::int as used, forfeited_quota::int as forfeited from licenses where firma_id = ${firmaId}`;
  return row;
}

async function dailyRedeemed(h: Harness, firmaId: string): Promise<number> {
  const [row] = await h.sql<{ n: number }[]>`select coalesce(sum(redeemed), 0)::int as n from license_daily_usage where firma_id = ${firmaId}`;
  return row?.n ?? -1;
}

function addQuota(h: Harness, lic: TestLicense, body: unknown, idempotencyKey?: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  return h.request('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, body, headers);
}

interface AdminPackage { id: number; amount: number; used: number; remaining: number; forfeited: number; expiresAt: string; note: string | null }
interface AdminLicense { totalQuota: number; usedQuota: number; remainingQuota: number; expiryDate: string; packages: AdminPackage[] }

/** The admin License (GET /admin/v1/licenses/{key}): live totals and package balances from Redis, the rest from Postgres. */
async function adminGet(h: Harness, lic: TestLicense): Promise<AdminLicense> {
  const res = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
  if (res.status !== 200) throw new Error(`admin GET: ${res.status} ${res.text}`);
  return res.body.data as AdminLicense;
}

/** The admin License's packages without the times (their creation time is Postgres's now). */
const packageFigures = (data: AdminLicense) =>
  data.packages.map(({ id, amount, used, remaining, forfeited, note }) => ({ id, amount, used, remaining, forfeited, note }));

/** Resolves once the clock is past ms (the service runs on this machine's clock). */
async function pastExpiry(ms: number): Promise<void> {
  const wait = ms - Date.now() + 50;
  if (wait > 0) await sleep(wait);
}

// one service for the file, its usage worker and forfeit sweep running
const h = await startHarness(t, 'packages', LIVE_COUNTS);

t.test('the package that expires first is spent first, and Postgres records purchases and spends', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const shortExpiry = Date.now() + HOUR_MS;
  const added = await addQuota(h, lic, { add: 5, expiresAt: ISO(shortExpiry), note: 'fatura 7' });
  t.equal(added.status, 200, added.text);
  t.equal(added.body?.data?.totalQuota, 15);
  const { tokens } = await mintTokens(h, lic, 3);
  for (const [i, token] of tokens.entries()) {
    const res = await h.validate(token);
    t.same([res.status, res.body?.usedQuota, res.body?.remainingQuota], [200, i + 1, 14 - i], `validate ${i + 1}`);
  }
  await h.drainWorker();

  const data = await adminGet(h, lic);
  t.same([data.totalQuota, data.usedQuota, data.remainingQuota], [15, 3, 12], 'the admin License: total 15, used 3');
  t.same(packageFigures(data), [
    { id: 1, amount: 10, used: 0, remaining: 10, forfeited: 0, note: null },
    { id: 2, amount: 5, used: 3, remaining: 2, forfeited: 0, note: 'fatura 7' },
  ], 'the package expiring in an hour funded all three; the license\'s own is untouched');
  t.equal(data.packages[1]?.expiresAt, ISO(shortExpiry), 'package 2 expires when the purchase said');
  t.equal(Date.parse(data.packages[0]?.expiresAt ?? ''), Date.parse(data.expiryDate), 'package 1 expires with the license');

  t.same(await pgLicense(h, lic.firmaId), { total: 15, used: 3, forfeited: 0 }, 'licenses: total 15, used 3');
  t.same(await ledgerOf(h, lic.firmaId), [
    { kind: 'purchase', amount: 10, package_no: 1, actor: 'admin', note: null },
    { kind: 'purchase', amount: 5, package_no: 2, actor: 'admin', note: 'fatura 7' },
  ], 'the ledger: a purchase entry per package, by the admin');
  t.equal(await dailyRedeemed(h, lic.firmaId), 3, 'daily totals: 3 redeemed');
});

t.test('a purchase while a package is being spent: that package keeps its units', async (t) => {
  // the license's package is the current one once a token is issued; a purchase then must
  // leave its units spendable after the new package is spent out
  const lic = await h.createLicense({ totalQuota: 2 });
  const { tokens } = await mintTokens(h, lic, 3);
  t.equal((await h.validate(tokens[0] as string)).status, 200, 'one unit of package 1 spent');
  t.equal((await addQuota(h, lic, { add: 1, expiresAt: ISO(Date.now() + HOUR_MS) })).body?.data?.totalQuota, 3);
  const second = await h.validate(tokens[1] as string);
  t.same([second.status, second.body?.usedQuota, second.body?.remainingQuota], [200, 2, 1], 'package 2 (expiring first) spent');
  const third = await h.validate(tokens[2] as string);
  t.same([third.status, third.body?.usedQuota, third.body?.remainingQuota], [200, 3, 0], 'the last unit of package 1 spent');
  await h.drainWorker();
  t.same((await pgPackages(h, lic.firmaId)).map((p) => [p.no, p.used]), [[1, 2], [2, 1]]);
  t.same(await pgLicense(h, lic.firmaId), { total: 3, used: 3, forfeited: 0 });
});

t.test('packages expiring in the same millisecond: the lower number is spent first', async (t) => {
  const lic = await h.createLicense({ totalQuota: 0 });
  const expiry = ISO(Date.now() + HOUR_MS);
  t.equal((await addQuota(h, lic, { add: 2, expiresAt: expiry })).status, 200);
  t.equal((await addQuota(h, lic, { add: 2, expiresAt: expiry })).status, 200);
  const { tokens } = await mintTokens(h, lic, 3);
  for (const token of tokens) t.equal((await h.validate(token)).status, 200);
  await h.drainWorker();
  const packages = await pgPackages(h, lic.firmaId);
  t.same(packages.map((p) => [p.no, p.used]), [[1, 2], [2, 1]], 'package 1 spent out before package 2 was touched');
  t.equal(packages[0]?.expires_ms, packages[1]?.expires_ms, 'the two expire together');
});

t.test('a license nobody uses: the sweep forfeits its expired package', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const expiry = Date.now() + SHORT_MS;
  const added = await addQuota(h, lic, { add: 3, expiresAt: ISO(expiry) });
  t.equal(added.body?.data?.totalQuota, 8);
  await pastExpiry(expiry);
  // no request of the license from here: only the sweep can make the total fall
  const data = await pollUntil(() => adminGet(h, lic), (d) => d.totalQuota !== 8, { timeoutMs: 15_000, intervalMs: 200 });
  t.same([data.totalQuota, data.usedQuota, data.remainingQuota], [5, 0, 5], 'the total fell by the 3 units left');
  await h.drainWorker();
  const packages = await pgPackages(h, lic.firmaId);
  t.same(packages.map((p) => [p.no, p.used, p.forfeited]), [[1, 0, 0], [2, 0, 3]], 'package 2 forfeited 3');
  t.same(await pgLicense(h, lic.firmaId), { total: 5, used: 0, forfeited: 3 });
  const forfeits = (await ledgerOf(h, lic.firmaId)).filter((e) => e.kind === 'forfeit');
  t.same(forfeits, [{ kind: 'forfeit', amount: -3, package_no: 2, actor: 'system', note: null }], 'one forfeit entry of -3, by the system');
});

t.test('a package spent out before it expired: no forfeit, and the sweep lets it go', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const expiry = Date.now() + SHORT_MS;
  t.equal((await addQuota(h, lic, { add: 3, expiresAt: ISO(expiry) })).status, 200);
  const { tokens } = await mintTokens(h, lic, 3);
  for (const token of tokens) t.equal((await h.validate(token)).status, 200, 'package 2 spent');
  await h.drainWorker();
  await pastExpiry(expiry);
  // the sweep names a package whose row shows units left: its spends counted on the license's
  // row (sql/015_open_package.sql) must reach the package's row, or it is named on every pass
  const named = () => h.sql`select package_no from license_package_rows
    where firma_id = ${lic.firmaId} and expires_at <= now() and forfeited = 0 and not spent_out`;
  t.same(await pollUntil(named, (rows) => rows.length === 0, { timeoutMs: 15_000, intervalMs: 200 }), [], 'no longer named by the sweep');
  await h.drainWorker();
  t.same((await pgPackages(h, lic.firmaId)).map((p) => [p.no, p.used, p.forfeited]), [[1, 0, 0], [2, 3, 0]], 'package 2: 3 used, none forfeited');
  t.same(await pgLicense(h, lic.firmaId), { total: 8, used: 3, forfeited: 0 });
  t.same((await ledgerOf(h, lic.firmaId)).filter((e) => e.kind === 'forfeit'), [], 'no forfeit entry');
  const data = await adminGet(h, lic);
  t.same([data.totalQuota, data.usedQuota, data.remainingQuota], [8, 3, 5], 'the admin License: total 8, used 3');
});

t.test('a license whose only package expired has no quota left', async (t) => {
  const lic = await h.createLicense({ totalQuota: 0 });
  const expiry = Date.now() + SHORT_MS;
  t.equal((await addQuota(h, lic, { add: 2, expiresAt: ISO(expiry) })).status, 200);
  const got = await h.getToken(lic.licenseKey, lic.password);
  t.same([got.status, got.body?.remainingQuota], [200, 2], 'get-token before the expiry: 2 left');
  await pastExpiry(expiry);

  const refused = await h.validate(got.body.signToken);
  t.equal(refused.status, 400);
  t.same(refused.body, { success: false, message: MSG.QUOTA, remainingQuota: 0 }, 'a token issued before the expiry is refused: no quota left');
  expectCodedError(t, await h.getToken(lic.licenseKey, lic.password), 400, 'INSUFFICIENT_QUOTA', 'get-token after the expiry');
  expectCheckQuotaError(t, await h.checkQuota(lic.licenseKey), 429, 'QUOTA_EXCEEDED', 'check-quota after the expiry',
    { remainingQuota: 0, totalQuota: 0, usedQuota: 0 });
  const data = await adminGet(h, lic);
  t.same([data.totalQuota, data.usedQuota, data.remainingQuota], [0, 0, 0]);
  await h.drainWorker();
  t.same(await pgLicense(h, lic.firmaId), { total: 0, used: 0, forfeited: 2 }, 'Postgres: both units forfeited, none spent');
});

t.test('refused purchases: expiresAt in the past or unparsable, a bad note; nothing credited', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const cases: [string, unknown, string][] = [
    ['expiresAt in the past', { add: 5, expiresAt: '2020-01-01T00:00:00.000Z' }, 'expiresAt'],
    ['expiresAt a second ago', { add: 5, expiresAt: ISO(Date.now() - 1000) }, 'expiresAt'],
    ['expiresAt unparsable', { add: 5, expiresAt: 'yarın' }, 'expiresAt'],
    ['expiresAt not a date', { add: 5, expiresAt: '2027-13-45T25:00:00Z' }, 'expiresAt'],
    ['expiresAt a number', { add: 5, expiresAt: Date.now() + HOUR_MS }, 'expiresAt'],
    ['a note of 501 characters', { add: 5, note: 'n'.repeat(501) }, 'note'],
    ['a note with a NUL', { add: 5, note: 'fatura\u00007' }, 'note'],
  ];
  for (const [what, body, field] of cases) {
    const res = await addQuota(h, lic, body);
    expectCodedError(t, res, 400, 'INVALID_REQUEST', what);
    t.match(String(res.body?.error?.message), new RegExp(`^/?${field}\\b`), `${what}: the message names ${field}`);
  }
  const data = await adminGet(h, lic);
  t.equal(data.totalQuota, 10, 'total unchanged');
  t.equal(data.packages.length, 1, 'no package made');
  t.same((await pgPackages(h, lic.firmaId)).map((p) => p.no), [1]);
  t.same((await ledgerOf(h, lic.firmaId)).map((e) => [e.kind, e.amount]), [['purchase', 10]], 'no ledger entry but the creation\'s');
  t.same(await pgLicense(h, lic.firmaId), { total: 10, used: 0, forfeited: 0 });

  const longest = await addQuota(h, lic, { add: 1, note: 'n'.repeat(500) });
  t.equal(longest.status, 200, 'a note of 500 characters is taken');
  t.equal(longest.body?.data?.packages?.[1]?.note, 'n'.repeat(500));
});

t.test('a purchase retried with its Idempotency-Key makes one package', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const body = { add: 5, expiresAt: ISO(Date.now() + HOUR_MS), note: 'fatura 9' };
  const first = await addQuota(h, lic, body, 'siparis-9');
  const retry = await addQuota(h, lic, body, 'siparis-9');
  t.same([first.status, first.body?.replayed, first.body?.data?.totalQuota], [200, false, 15]);
  t.same([retry.status, retry.body?.replayed, retry.body?.data?.totalQuota], [200, true, 15], 'the retry is a replay');
  t.equal(retry.body?.data?.packages?.length, 2, 'the replay shows the one package');
  // two at once with another key: one credits, the other waits for it and replays
  const both = await Promise.all([addQuota(h, lic, body, 'siparis-10'), addQuota(h, lic, body, 'siparis-10')]);
  t.same(both.map((r) => r.status), [200, 200]);
  t.same(both.map((r) => r.body?.replayed).sort(), [false, true], 'one credited, one replayed');
  t.same((await pgPackages(h, lic.firmaId)).map((p) => [p.no, p.amount, p.note]), [[1, 10, null], [2, 5, 'fatura 9'], [3, 5, 'fatura 9']],
    'one package per key');
  t.same((await ledgerOf(h, lic.firmaId)).map((e) => [e.kind, e.amount, e.package_no]),
    [['purchase', 10, 1], ['purchase', 5, 2], ['purchase', 5, 3]], 'one purchase entry per key');
  t.equal((await pgLicense(h, lic.firmaId))?.total, 20);
});

t.test('the millisecond of expiry (redeem.lua called directly): expiry - 1 spends the package, expiry forfeits it', async (t) => {
  // the script takes its clock from the call, so the boundary is driven exactly: a
  // redemption at the package's expiry - 1 ms, another at its expiry
  const redis = createRedis(h.config, 'test-packages');
  t.teardown(() => redis.quit());
  const item = (token: string): Redemption => {
    const c = claimsOf(token);
    const k = h.keys.forLicense(c.firma_id);
    return {
      keys: k, markers: k.markers(c.exp * 1000).key, limit: 0, host: '', tokenId: c.token_id, firmaId: c.firma_id, imzaTipi: c.imza_tipi,
      iatMs: c.iat * 1000, origin: null, idempotency: null, receiptPrefix: '',
    };
  };
  const redeemAt = async (token: string, nowMs: number) => (await runScript(redis, batchCall(redeemLayout, [item(token)], nowMs, 60_000, 0)))[0];

  const lic = await h.createLicense({ totalQuota: 10 });
  const expiry = Date.now() + HOUR_MS;
  t.equal((await addQuota(h, lic, { add: 2, expiresAt: ISO(expiry) })).status, 200);
  const k = h.keys.forLicense(lic.firmaId);
  const { tokens } = await mintTokens(h, lic, 2);
  const [a, b] = tokens as [string, string];

  t.same(await redeemAt(a, expiry - 1), [Outcome.DONE, 1, 11, 0, 0, 0, ''], 'at expiry - 1: redeemed, 11 left of 12');
  t.same(await redis.hmget(k.license, L.packageNo, L.packageLeft, L.forfeitedQuota), ['2', '1', '0'], 'package 2 funded it: 1 unit left');
  t.same(await redeemAt(b, expiry), [Outcome.DONE, 2, 9, 0, 0, 0, ''], 'at expiry: redeemed, total 11 (1 forfeited), 9 left');
  t.same(await redis.hmget(k.license, L.packageNo, L.packageLeft, L.forfeitedQuota), ['1', '9', '1'],
    'package 2 forfeited its last unit; package 1 funded the redemption');
  t.equal(await redis.hget(k.packages, '2'), null, 'Redis holds no units of package 2');

  await h.drainWorker();
  const left = async (no: number): Promise<number> => {
    const [pn, pl] = await redis.hmget(k.license, L.packageNo, L.packageLeft);
    if (pn === String(no)) return Number(pl);
    const held = await redis.hget(k.packages, String(no));
    return held === null ? 0 : Number(held.split('\t')[1]);
  };
  const packages = await pgPackages(h, lic.firmaId);
  t.same(packages.map((p) => [p.no, p.used, p.forfeited]), [[1, 1, 0], [2, 1, 1]], 'Postgres: one unit spent of each, one forfeited of package 2');
  for (const p of packages) {
    t.equal(p.used + p.forfeited + await left(p.no), p.amount, `package ${p.no}: spent + forfeited + units left (Redis) = amount`);
  }
  t.same(await pgLicense(h, lic.firmaId), { total: 11, used: 2, forfeited: 1 });
  t.same((await ledgerOf(h, lic.firmaId)).filter((e) => e.kind === 'forfeit').map((e) => [e.amount, e.package_no, e.actor]), [[-1, 2, 'system']]);
});

// ---- with the usage worker stopped: what Redis decided before Postgres has it ----------------

t.test('with events queued (RUN_WORKER=0)', async (t) => {
  const q = await startHarness(t, 'packages-queued', { ...LIVE_COUNTS, RUN_WORKER: '0' });

  t.test('forfeit at expiry through a redemption (no sweep runs: no worker)', async (t) => {
    const lic = await q.createLicense({ totalQuota: 10 });
    const { tokens } = await mintTokens(q, lic, 2);
    const [a, b] = tokens as [string, string];
    const expiry = Date.now() + SHORT_MS;
    t.equal((await addQuota(q, lic, { add: 4, expiresAt: ISO(expiry) })).body?.data?.totalQuota, 14);
    const first = await q.validate(a);
    t.same([first.status, first.body?.usedQuota, first.body?.remainingQuota], [200, 1, 13], 'one unit of the short package spent');
    await pastExpiry(expiry);
    const data0 = await adminGet(q, lic);
    t.equal(data0.totalQuota, 14, 'nothing forfeited before a redemption (no sweep without a worker)');

    const second = await q.validate(b);
    t.same([second.status, second.body?.usedQuota, second.body?.remainingQuota], [200, 2, 9],
      'funded by the long package: total 14 - 3 forfeited = 11, 2 used');
    const data = await adminGet(q, lic);
    t.same([data.totalQuota, data.usedQuota, data.remainingQuota], [11, 2, 9], 'admin: total fell by exactly 3');
    const quota = await q.checkQuota(lic.licenseKey);
    t.same([quota.status, quota.body?.data?.totalQuota, quota.body?.data?.usedQuota, quota.body?.data?.remainingQuota], [200, 11, 2, 9],
      'check-quota: total 11, 9 remaining');
    const events = (await q.redis.xrange(q.keys.forLicense(lic.firmaId).stream, '-', '+')).map(([, fields]) => forfeitOf(fields))
      .filter((f) => f?.firmaId === lic.firmaId);
    t.same(events, [{ firmaId: lic.firmaId, packageNo: 2, units: 3 }], 'one forfeit event, in the stream with the redemptions');

    await spawnWorker(t, q.workerEnv());
    await q.drainWorker();
    const packages = await pgPackages(q, lic.firmaId);
    t.same(packages.map((p) => [p.no, p.amount, p.used, p.forfeited]), [[1, 10, 1, 0], [2, 4, 1, 3]]);
    t.same(packageFigures(await adminGet(q, lic)).map((p) => [p.id, p.remaining, p.forfeited]), [[1, 9, 0], [2, 0, 3]],
      'admin packages: the short one forfeited 3, none remaining');
    t.same(await pgLicense(q, lic.firmaId), { total: 11, used: 2, forfeited: 3 }, 'licenses: total 11, used 2, forfeited 3');
    t.same((await ledgerOf(q, lic.firmaId)).filter((e) => e.kind === 'forfeit'),
      [{ kind: 'forfeit', amount: -3, package_no: 2, actor: 'system', note: null }], 'one forfeit entry of -3 for package 2, by the system');
    const [forfeit] = await q.sql`select balance_after::int as balance from license_ledger where firma_id = ${lic.firmaId} and kind = 'forfeit'`;
    t.equal(forfeit?.balance, 10, 'its balance after: 14 bought, less the redemption before it in the same batch, less 3 (not the row before the batch less 3)');
  });

  t.test('hydration rebuilds the packages less what the queued events spent', async (t) => {
    const lic = await q.createLicense({ totalQuota: 10 });
    t.equal((await addQuota(q, lic, { add: 5, expiresAt: ISO(Date.now() + HOUR_MS) })).status, 200);
    const { tokens } = await mintTokens(q, lic, 4);
    for (const token of tokens.slice(0, 2)) t.equal((await q.validate(token)).status, 200);
    const k = q.keys.forLicense(lic.firmaId);
    t.ok((await q.redis.xlen(k.stream)) > 0, 'the redemptions are still queued');
    t.equal(await q.redis.del(k.license, k.packages), 2, 'the license hash and its package hash deleted');

    const third = await q.validate(tokens[2] as string);
    t.same([third.status, third.body?.usedQuota, third.body?.remainingQuota], [200, 3, 12], 'the rebuilt copy counts 3 used of 15');
    t.same(await q.redis.hmget(k.license, L.packageNo, L.packageLeft, L.usedQuota, L.forfeitedQuota), ['2', '2', '3', '0'],
      'package 2 (expiring first) spent 3: 2 units left');
    t.equal(await q.redis.hget(k.packages, '1'), `${Date.parse((await adminGet(q, lic)).expiryDate)}\t10`, 'package 1 untouched, 10 left');
    const live = await adminGet(q, lic);
    t.same(packageFigures(live).map((p) => [p.id, p.used, p.remaining]), [[1, 0, 10], [2, 3, 2]],
      'the admin view\'s packages are Redis\'s before Postgres has the redemptions, and add up to its usedQuota');
    t.equal(live.usedQuota, 3);

    await spawnWorker(t, q.workerEnv());
    await q.drainWorker();
    t.same((await pgPackages(q, lic.firmaId)).map((p) => [p.no, p.used, p.forfeited]), [[1, 0, 0], [2, 3, 0]], 'Postgres agrees');
    t.same(await pgLicense(q, lic.firmaId), { total: 15, used: 3, forfeited: 0 });
    t.equal(await dailyRedeemed(q, lic.firmaId), 3);
    const fourth = await q.validate(tokens[3] as string);
    t.same([fourth.status, fourth.body?.usedQuota, fourth.body?.remainingQuota], [200, 4, 11]);
    // written before this worker stops: an event it read and had not acknowledged would wait
    // WORKER_CLAIM_IDLE_MS for the next subtest's worker
    await q.drainWorker();
  });

  t.test('a release written in the batch of its own redemption: the ledger\'s balance after counts the batch', async (t) => {
    const lic = await q.createLicense({ totalQuota: 10, releasesPerDay: 5 });
    const { tokens } = await mintTokens(q, lic, 3);
    const [a, b, c] = tokens as [string, string, string];
    for (const token of [a, b]) t.equal((await q.validate(token)).status, 200);
    t.equal((await release(q, a, 'kart çıkarıldı')).status, 200);
    t.equal((await q.validate(c)).status, 200);
    t.equal((await release(q, b)).status, 200);

    await spawnWorker(t, q.workerEnv());
    await q.drainWorker();
    const entries = await q.sql`select kind, amount::int as amount, balance_after::int as balance from license_ledger
      where firma_id = ${lic.firmaId} order by id`;
    t.same(entries.map((e) => [e.kind, e.amount, e.balance]), [['purchase', 10, 10], ['release', 1, 9], ['release', 1, 9]],
      'each release\'s balance after: 10 less the redemptions before it, plus the releases until it (9 after a, then 9 after c and b)');
    t.same(await pgLicense(q, lic.firmaId), { total: 10, used: 1, forfeited: 0 }, 'and the license: 3 redeemed, 2 released');
  });
});
