import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { scrape } from '../helpers/metrics.js';
import { getTokenPair } from '../helpers/tokens.js';
import { waitFor } from '../helpers/wait.js';
import { eventFields } from '../helpers/events.js';

// A second redemption of one token that reaches Postgres (what the fences of
// src/redis/restarts.ts rule out, played here by queuing it by hand, with Redis's copy
// charged for it as redeem.lua would have) is not dropped in silence: Postgres counts the
// token once, the event is kept as a dead letter (code SECOND_REDEMPTION), the metric counts
// it, the log says so, and the license's Redis copy is rebuilt so that check-quota and
// Postgres agree again. A replay of the same redemption (a worker that died before its
// acknowledgement) is no second redemption: nothing is reported.

t.test('a second redemption of a token reaching Postgres: counted once, recorded, alerted, reconciled', async (t) => {
  const h = await startHarness(t, 'second-redemption', { QUOTA_CACHE_SECONDS: '0' }, { logLevel: 'error' });
  const lic = await h.createLicense({ totalQuota: 10 });
  const { signToken } = await getTokenPair(h, lic);
  t.equal((await h.validate(signToken)).status, 200, 'redeemed once');
  const c = claimsOf(signToken);
  const keys = h.keys.forLicense(c.firma_id);
  await waitFor('the redemption in Postgres', async () =>
    (await h.sql`select used_quota::int as u from licenses where firma_id = ${c.firma_id}`)[0]?.u === 1);

  // a replay of the same event (same time) first: nothing to report
  const row = (await h.sql`select (extract(epoch from used_at) * 1000)::int8::text as ms, package_no from token_redemptions where token_id = ${c.token_id}`)[0];
  const atMs = Number(row?.ms);
  const packageNo = Number(row?.package_no);
  const event = (at: number) => eventFields({ tokenId: c.token_id, firmaId: c.firma_id, imzaTipi: c.imza_tipi, atMs: at, issuedMs: c.iat * 1000, packageNo });
  await h.redis.xadd(keys.stream, '*', ...event(atMs));
  await waitFor('the replay written', async () => (await h.redis.xlen(keys.stream)) === 0);
  t.equal(await h.redis.xlen(h.keys.deadLetters), 0, 'a replay of the same redemption is no second redemption');

  // a second redemption, as Redis would have counted it: the copy charged, the event queued
  await h.redis.hincrby(keys.license, 'u', 1);
  await h.redis.hincrby(keys.license, 'pl', -1);
  t.equal((await h.checkQuota(lic.licenseKey)).body.data.usedQuota, 2, 'Redis counted the second redemption');
  await h.redis.xadd(keys.stream, '*', ...event(atMs + 1500));
  await waitFor('the dead letter', async () => (await h.redis.xlen(h.keys.deadLetters)) === 1);

  const [[, fields] = ['', []]] = await h.redis.xrange(h.keys.deadLetters, '-', '+') as [string, string[]][];
  const letter: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) letter[fields[i] as string] = fields[i + 1] as string;
  t.equal(letter.code, 'SECOND_REDEMPTION', 'kept as a dead letter with its code');
  t.match(letter.error, new RegExp(`token ${c.token_id} of ${c.firma_id} was redeemed at ${new Date(atMs).toISOString()}`), 'naming the token and its first redemption');
  t.same(JSON.parse(letter.event ?? '[]'), event(atMs + 1500), 'the event as it was queued');
  t.same((await h.sql`select count(*)::int as n from token_redemptions where token_id = ${c.token_id}`)[0]?.n, 1, 'Postgres: one redemption row');
  t.equal((await h.sql`select used_quota::int as u from licenses where firma_id = ${c.firma_id}`)[0]?.u, 1, 'Postgres: used once');
  await waitFor('the copy rebuilt', async () => (await h.checkQuota(lic.licenseKey)).body.data?.usedQuota === 1);
  t.pass('check-quota agrees with Postgres again: used 1, remaining 9');
  t.equal((await h.checkQuota(lic.licenseKey)).body.data.remainingQuota, 9);
  await waitFor('the metric', async () => (await scrape(h)).value('license_usage_second_redemptions_total') === 1);
  t.pass('license_usage_second_redemptions_total counts it');
  const { signToken: next } = await getTokenPair(h, lic);
  const after = await h.validate(next);
  t.same([after.status, after.body.usedQuota, after.body.remainingQuota], [200, 2, 8], 'the next redemption counts from the reconciled figure');
});
