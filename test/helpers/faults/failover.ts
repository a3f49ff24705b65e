import type { Test } from 'tap';
import type { Harness, TestLicense } from '../harness.js';
import { claimsOf } from '../jwt.js';
import { TokenSource } from '../tokens.js';
import { pollUntil, sleep } from '../wait.js';

// The service as deployed (startHarness) on a highly available Redis whose failover loses
// the last acknowledged writes (test/helpers/redisHa.ts): the redemptions of the lost
// window, replayed afterwards, must all be refused; tokens issued before the failover are
// refused as used (fail closed); the books must agree: Postgres's used quota, its
// redemption rows and what check-quota shows (Redis's rebuilt copy).

const SIGN_PATH = '/api/signature/sign';
const RELEASE_PATH = '/api/license/release';
const DOCUMENTS = [{ name: 'reçete-2026-0001.xml', sha256: 'a'.repeat(64) }];

/** What the clients were answered for one token. */
export interface Answered {
  token: string;
  tokenId: string;
  firmaId: string;
  status: number;
  /** the answer's message ("" when none came) */
  message: string;
}

/** The tokens of a failover test: per license, those redeemed before, in the lost window, and never. */
export interface FailoverTokens {
  early: string[];
  window: string[];
  outstanding: string[];
}

/** n tokens of each set for each license, all issued before anything is cut. */
export async function failoverTokens(h: Harness, licenses: TestLicense[], n: number): Promise<FailoverTokens> {
  const sets: FailoverTokens = { early: [], window: [], outstanding: [] };
  for (const lic of licenses) {
    const source = new TokenSource(h, lic);
    sets.early.push(...await source.many(n));
    sets.window.push(...await source.many(n));
    sets.outstanding.push(...await source.many(n));
  }
  return sets;
}

/**
 * Redeems every token at once, half by validate and half by sign (with a document), and
 * releases the tokens of releaseOf (redeemed earlier) beside them, the load a failover
 * meets; the answers of both.
 */
export async function redeemAll(h: Harness, tokens: string[], releaseOf: string[] = []): Promise<[Answered[], Answered[]]> {
  const redeeming = tokens.map(async (token, i) => {
    const c = claimsOf(token);
    const answer = i % 2 === 0
      ? await h.validate(token).catch(() => ({ status: 0, body: null }))
      : await h.request('POST', SIGN_PATH, { token, documents: DOCUMENTS }).catch(() => ({ status: 0, body: null }));
    return { token, tokenId: c.token_id, firmaId: c.firma_id, status: answer.status, message: messageOf(answer.body) };
  });
  const releasing = releaseOf.map(async (token) => {
    const c = claimsOf(token);
    const answer = await h.request('POST', RELEASE_PATH, { token, reason: 'kart çekildi' }).catch(() => ({ status: 0, body: null }));
    return { token, tokenId: c.token_id, firmaId: c.firma_id, status: answer.status, message: messageOf(answer.body) };
  });
  return Promise.all([Promise.all(redeeming), Promise.all(releasing)]);
}

function messageOf(body: unknown): string {
  const message = (body as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : '';
}

/** Each status and message the answers other than `expected` held, with their counts: what a failed check shows. */
export function otherAnswers(answers: Answered[], expected: number): string {
  const seen = new Map<string, number>();
  for (const a of answers) if (a.status !== expected) seen.set(`${a.status} ${a.message}`, (seen.get(`${a.status} ${a.message}`) ?? 0) + 1);
  return JSON.stringify(Object.fromEntries(seen));
}

/**
 * redeemAll, with the answers that said "try again" (503, or none) tried again, at most
 * `rounds` more times 300 ms apart, as a client would: a Sentinel client may drop its
 * connection once more when the sentinels' announcement of the new master reaches it after
 * it found that master itself. Each token's first answer that was not "try again".
 */
export async function redeemAnswered(h: Harness, tokens: string[], rounds = 5): Promise<Answered[]> {
  const [answers] = await redeemAll(h, tokens);
  for (let round = 0; round < rounds; round++) {
    const again = answers.flatMap((a, i) => (a.status === 503 || a.status === 0 ? [i] : []));
    if (again.length === 0) break;
    await sleep(300);
    const [retried] = await redeemAll(h, again.map((i) => (answers[i] as Answered).token));
    again.forEach((i, j) => { answers[i] = retried[j] as Answered; });
  }
  return answers;
}

/** Counts of answers by status. */
export function countsOf(answers: Answered[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

/** Until a fresh token of the license redeems (the service serves on the new master); ms it took. */
export async function untilRedeemsAgain(h: Harness, lic: TestLicense, timeoutMs = 30_000): Promise<number> {
  const from = Date.now();
  for (;;) {
    try {
      const token = await new TokenSource(h, lic).next();
      if ((await h.validate(token)).status === 200) return Date.now() - from;
    } catch {
      // get-token answered 503 (the failover is not over): ask again
    }
    if (Date.now() - from > timeoutMs) throw new Error(`no redemption within ${timeoutMs} ms of the failover`);
    await sleep(200);
  }
}

/** The license's figures in Postgres: used_quota, its redemption rows, its release rows. */
async function postgresBooks(h: Harness, firmaId: string): Promise<{ used: number; rows: number; releases: number }> {
  const [row] = await h.sql`
    select l.used_quota::int as used,
           (select count(*)::int from token_redemptions r where r.firma_id = l.firma_id) as rows,
           (select count(*)::int from token_releases x where x.firma_id = l.firma_id) as releases
    from licenses l where l.firma_id = ${firmaId}`;
  return row as { used: number; rows: number; releases: number };
}

/**
 * Waits for the worker to write what the streams hold, then checks per license that
 * Postgres's used quota is its redemption rows less its releases, and that check-quota
 * (the service's Redis copy) shows the same. Returns the tokens answered 200 whose
 * redemption Postgres lacks: redemptions the failover lost (reported, never counted twice).
 */
export async function checkFailoverBooks(t: Test, h: Harness, licenses: TestLicense[], answered: Answered[]): Promise<string[]> {
  const ok = new Set(answered.filter((a) => a.status === 200).map((a) => a.tokenId));
  await h.drainWorker(30_000);
  t.pass('the worker wrote every queued event to Postgres');
  for (const lic of licenses) {
    const pg = await postgresBooks(h, lic.firmaId);
    t.equal(pg.used, pg.rows - pg.releases, `${lic.firmaId}: Postgres's used quota is its redemption rows less its releases (${JSON.stringify(pg)})`);
    // asked again while it answers 503 (the license's copy still being rebuilt after the
    // promotion) or is rate-limited: the books are compared once it answers the license
    const quota = await pollUntil(() => h.checkQuota(lic.licenseKey),
      (q) => q.status !== 503 && q.body.error?.code !== 'RATE_LIMITED', { timeoutMs: 15_000, intervalMs: 250 });
    t.equal(quota.body.data?.usedQuota, pg.used, `${lic.firmaId}: check-quota shows what Postgres holds (${pg.used})`,
      { status: quota.status, body: quota.body });
  }
  const stored = new Set((await h.sql`select token_id::text as id from token_redemptions where token_id = any(${[...ok]}::uuid[])`)
    .map((r) => String(r.id)));
  return [...ok].filter((id) => !stored.has(id));
}
