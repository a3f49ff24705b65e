import { connect } from 'node:net';
import fc from 'fast-check';
import t from 'tap';
import { createRedis } from '../../src/redis/client.js';
import { IDEMPOTENCY_WINDOW_MS } from '../../src/redis/keys.js';
import { SIGN_TOKEN_SECONDS } from '../../src/tokens/jwt.js';
import { batchCall, redeemLayout, type Redemption } from '../../src/redis/batchScripts.js';
import { Outcome } from '../../src/redis/outcomes.js';
import { runScript } from '../../src/redis/scriptCall.js';
import { adminOk, adminView } from '../helpers/admin.js';
import { FUZZ_SEED } from '../helpers/fuzzRequests.js';
import { LIVE_COUNTS, startHarness, type TestLicense } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { claimsOf } from '../helpers/jwt.js';
import { MSG } from '../helpers/shapes.js';
import { mintTokens, TokenSource } from '../helpers/tokens.js';

// POST /api/license/validate with an Idempotency-Key: a retry with the key of a
// redemption answers that redemption's body again, byte for byte, and spends nothing; the key
// with another token of the license is 422; a malformed key is 400; without the header
// nothing changes. The record is the license's own and expires with the token.

const h = await startHarness(t, 'validate-idem', LIVE_COUNTS);

const KEY_REUSED = { success: false, message: 'Bu işlem anahtarı başka bir token için kullanıldı.' };
const BAD_KEY = { success: false, message: 'Geçersiz istek: Idempotency-Key' };
const KEY_RE = /^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/;

const validate = (token: string, key?: string): Promise<Answer> =>
  h.request('POST', '/api/license/validate', { token }, key === undefined ? {} : { 'idempotency-key': key });

const usedOf = async (lic: TestLicense): Promise<number> => (await adminView(h, lic.licenseKey)).usedQuota as number;

/** The key's record as Redis keeps it, in this window's hash or the one before (a claim may straddle them). */
async function recordOf(lic: TestLicense, key: string): Promise<{ hash: string; value: string } | null> {
  const at = h.keys.forLicense(lic.firmaId).idempotency(key, Date.now());
  for (const hash of [at.current, at.previous]) {
    const value = await h.redis.hget(hash, at.field);
    if (value !== null) return { hash, value };
  }
  return null;
}

/**
 * validate with the Idempotency-Key's bytes exactly as given (latin1: one byte a character),
 * over a socket of its own: fetch trims the value and refuses some bytes.
 */
function rawValidate(token: string, key: string): Promise<{ status: number; text: string }> {
  const body = Buffer.from(JSON.stringify({ token }));
  const request = Buffer.concat([
    Buffer.from(`POST /api/license/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n`
      + `Content-Length: ${body.length}\r\nConnection: close\r\nIdempotency-Key:`),
    Buffer.from(key, 'latin1'), Buffer.from('\r\n\r\n'), body,
  ]);
  return new Promise((resolve, reject) => {
    const socket = connect(h.service.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(30_000, () => socket.destroy(new Error('no answer in time')));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(all.subarray(0, split).toString('latin1'))?.[1] ?? NaN);
      resolve({ status, text: all.subarray(split + 4).toString('utf8') });
    });
    socket.write(request);
  });
}

t.test('50 parallel retries with one key and one token: one body, one unit spent, one row', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const [token] = (await mintTokens(h, lic, 1)).tokens as [string];
  const answers = await Promise.all(Array.from({ length: 50 }, () => validate(token, 'order-4711')));
  t.same(answers.map((a) => a.status), Array(50).fill(200), 'every retry is 200');
  const first = answers[0] as Answer;
  t.same(first.body, { success: true, message: first.body?.message, usedQuota: 1, remainingQuota: 9 }, 'the one redemption');
  t.ok(answers.every((a) => a.text === first.text), 'every body is byte-identical');
  t.equal(await usedOf(lic), 1, 'admin view: one unit used');
  t.equal((await h.checkQuota(lic.licenseKey)).body?.data?.usedQuota, 1, 'check-quota: one unit used');
  await h.drainWorker();
  const rows = await h.sql`select count(*)::int as n from token_redemptions where token_id = ${claimsOf(token).token_id}`;
  t.equal(rows[0]?.n, 1, 'Postgres: exactly one redemption row for the token');
});

t.test('a later retry answers the first body even after other redemptions moved the counts', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const [a, b, c] = await new TokenSource(h, lic).many(3);
  const first = await validate(a as string, 'k-1');
  t.equal(first.status, 200);
  t.equal((await validate(b as string)).body?.usedQuota, 2, 'another redemption');
  t.equal((await validate(c as string, 'k-2')).body?.usedQuota, 3, 'and one with another key');
  const retry = await validate(a as string, 'k-1');
  t.equal(retry.status, 200);
  t.equal(retry.text, first.text, 'byte-identical to the first answer');
  t.same(retry.body, { success: true, message: first.body?.message, usedQuota: 1, remainingQuota: 9 }, 'the first figures');
  t.equal(await usedOf(lic), 3, 'the retry spent nothing');
});

t.test('one batch holding one key twice (redeem.lua called directly)', async (t) => {
  const redis = createRedis(h.config, 'test-idempotency');
  t.teardown(() => redis.quit());
  /** token's redemption with key, made at nowMs (the windows follow it) */
  const item = (token: string, key: string | null, nowMs = Date.now()): Redemption => {
    const c = claimsOf(token);
    const k = h.keys.forLicense(c.firma_id);
    return {
      keys: k, markers: k.markers(c.exp * 1000).key, limit: 0, host: '', tokenId: c.token_id, firmaId: c.firma_id, imzaTipi: c.imza_tipi,
      iatMs: c.iat * 1000, origin: null, idempotency: key === null ? null : k.idempotency(key, nowMs), receiptPrefix: '',
    };
  };
  const run = (items: Redemption[], nowMs = Date.now()) => runScript(redis, batchCall(redeemLayout, items, nowMs, 60_000, 0));

  t.test('same token, same key twice: both DONE with one set of figures, one unit', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const [token] = (await mintTokens(h, lic, 1)).tokens as [string];
    const out = await run([item(token, 'K'), item(token, 'K')]);
    t.same(out, [[Outcome.DONE, 1, 9, 0, 0, 0, ''], [Outcome.DONE, 1, 9, 0, 0, 0, '']], 'both DONE, used 1, remaining 9');
    t.equal(await usedOf(lic), 1, 'one unit spent');
    const retry = await validate(token, 'K');
    t.same([retry.status, retry.body?.usedQuota, retry.body?.remainingQuota], [200, 1, 9], 'a retry over HTTP finds the same record');
  });

  t.test('token A with key K, then token B with K: A DONE, B refused and still redeemable', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const [a, b] = (await mintTokens(h, lic, 2)).tokens as [string, string];
    const out = await run([item(a, 'K'), item(b, 'K')]);
    t.same(out[0], [Outcome.DONE, 1, 9, 0, 0, 0, ''], 'A redeemed');
    t.equal(out[1]?.[0], Outcome.IDEMPOTENCY_KEY_REUSED, 'B: IDEMPOTENCY_KEY_REUSED');
    t.equal(await usedOf(lic), 1, 'B spent nothing');
    const again = await validate(b, 'K');
    t.same([again.status, again.body], [422, KEY_REUSED], 'B with K over HTTP: 422');
    const later = await validate(b, 'K2');
    t.same([later.status, later.body?.usedQuota], [200, 2], 'B redeems with another key');
    t.equal(await usedOf(lic), 2);
  });

  t.test('a record claimed in the window before is found in the next: replayed for its token, 422 for another', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const [a, b] = (await mintTokens(h, lic, 2)).tokens as [string, string];
    // the script reads its clock from the call: A's claim 1 ms before a window opens, its
    // retry and B a second after (both within A's life)
    const boundary = Math.floor(claimsOf(a).iat * 1000 / IDEMPOTENCY_WINDOW_MS) * IDEMPOTENCY_WINDOW_MS;
    const after = boundary + 1_000;
    t.not(item(a, 'edge', boundary - 1).idempotency?.current, item(a, 'edge', after).idempotency?.current, 'two windows');
    t.same(await run([item(a, 'edge', boundary - 1)], boundary - 1), [[Outcome.DONE, 1, 9, 0, 0, 0, '']], 'A redeemed in the window before');
    t.same(await run([item(a, 'edge', after)], after), [[Outcome.DONE, 1, 9, 0, 0, 0, '']], 'A retried in the next window: the first figures');
    t.equal((await run([item(b, 'edge', after)], after))[0]?.[0], Outcome.IDEMPOTENCY_KEY_REUSED, 'B with the key: refused');
    t.equal(await usedOf(lic), 1, 'one unit spent');
  });

  t.test('servers\' clocks a few ms apart across a window boundary: the one behind finds the record the one ahead claimed', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const [a, b] = (await mintTokens(h, lic, 2)).tokens as [string, string];
    // A redeemed through a server whose clock has just passed a boundary; its retry, and B with
    // the key, through one 5 ms behind, whose clock is still in the window before
    const boundary = (Math.floor(claimsOf(a).iat * 1000 / IDEMPOTENCY_WINDOW_MS) + 1) * IDEMPOTENCY_WINDOW_MS;
    const ahead = boundary + 1;
    const behind = boundary - 4;
    t.not(item(a, 'skew', ahead).idempotency?.current, item(a, 'skew', behind).idempotency?.current, 'two windows');
    t.same(await run([item(a, 'skew', ahead)], ahead), [[Outcome.DONE, 1, 9, 0, 0, 0, '']], 'A redeemed by the server ahead');
    t.same(await run([item(a, 'skew', behind)], behind), [[Outcome.DONE, 1, 9, 0, 0, 0, '']], 'A retried through the server behind: the first figures');
    t.equal((await run([item(b, 'skew', behind)], behind))[0]?.[0], Outcome.IDEMPOTENCY_KEY_REUSED, 'B with the key through the server behind: refused');
    t.equal(await usedOf(lic), 1, 'one unit spent');
  });

  t.test('a record lives as long as its token: then the key is free, in its window and the next', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const [a, b, c] = (await mintTokens(h, lic, 3)).tokens as [string, string, string];
    const life = SIGN_TOKEN_SECONDS * 1000;
    const iatA = claimsOf(a).iat * 1000;
    const iatB = claimsOf(b).iat * 1000;
    t.same(await run([item(a, 'short', iatA)], iatA), [[Outcome.DONE, 1, 9, 0, 0, 0, '']], 'A claims the key');
    const aLast = iatA + life - 1;
    t.equal((await run([item(b, 'short', aLast)], aLast))[0]?.[0], Outcome.IDEMPOTENCY_KEY_REUSED, 'B in A\'s last ms: refused');
    const aGone = iatA + life;
    t.same(await run([item(b, 'short', aGone)], aGone), [[Outcome.DONE, 2, 8, 0, 0, 0, '']], 'B once A has expired: redeemed');
    const bGone = Math.max(aGone, iatB + life) + 1_000;
    t.same(await run([item(c, 'short', bGone)], bGone), [[Outcome.DONE, 3, 7, 0, 0, 0, '']], 'C once B has expired: redeemed');
    t.equal(await usedOf(lic), 3);
  });
});

t.test('the key with another token of the license: 422, nothing spent, that token still redeems', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const [a, b] = await new TokenSource(h, lic).many(2);
  t.equal((await validate(a as string, 'shared')).status, 200, 'A redeems with the key');
  const reused = await validate(b as string, 'shared');
  t.equal(reused.status, 422, '422 for B with A\'s key');
  t.strictSame(reused.body, KEY_REUSED, 'exactly the published body');
  t.equal(await usedOf(lic), 1, 'nothing spent for B');
  const plain = await validate(b as string);
  t.same([plain.status, plain.body?.usedQuota], [200, 2], 'B redeems without the key');
});

t.test('a key that serves another token wins over the other refusals: 422 for a spent token or a refused origin', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, domains: ['imza.ornek.com.tr'] });
  const [a, b, c] = await new TokenSource(h, lic).many(3) as [string, string, string];
  const origin = (token: string, key: string, from: string) => h.request('POST', '/api/license/validate', { token, origin: from }, { 'idempotency-key': key });
  t.equal((await origin(a, 'taken', 'https://imza.ornek.com.tr')).status, 200, 'A redeems with the key');
  t.equal((await origin(b, 'other', 'https://imza.ornek.com.tr')).status, 200, 'B redeems with another key');
  t.strictSame((await origin(b, 'taken', 'https://imza.ornek.com.tr')).body, KEY_REUSED, 'spent B with A\'s key: 422, not "used"');
  t.strictSame((await origin(c, 'taken', 'https://evil.example')).body, KEY_REUSED, 'C from a refused origin with A\'s key: 422');
  const refused = await origin(c, 'fresh', 'https://evil.example');
  t.same([refused.status, refused.body?.message], [401, 'Bu domain için yetki yok'], 'C with a free key: the origin refusal');
  t.equal(await usedOf(lic), 2, 'nothing spent by the refusals');
});

t.test('keys are per license: two licenses use one key freely', async (t) => {
  const one = await h.createLicense({ totalQuota: 5 });
  const two = await h.createLicense({ totalQuota: 5 });
  const a = await validate((await mintTokens(h, one, 1)).tokens[0] as string, 'same-key');
  const b = await validate((await mintTokens(h, two, 1)).tokens[0] as string, 'same-key');
  t.same([a.status, a.body?.usedQuota, b.status, b.body?.usedQuota], [200, 1, 200, 1], 'both redeem');
  t.same([await usedOf(one), await usedOf(two)], [1, 1]);
});

t.test('without the header nothing changes; a key added on a retry does not revive a used token', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const [a, b] = await new TokenSource(h, lic).many(2);
  t.equal((await validate(a as string)).status, 200);
  const second = await validate(a as string);
  t.same([second.status, second.body], [400, { success: false, message: MSG.USED }], 'a second validate: 400 used');
  t.equal((await validate(b as string)).status, 200, 'B redeemed without a key');
  const keyed = await validate(b as string, 'late-key');
  t.same([keyed.status, keyed.body], [400, { success: false, message: MSG.USED }], 'retried with a key: 400 used');
  t.equal(await usedOf(lic), 2);
});

t.test('a refused first attempt leaves no record; the retry after a purchase redeems', async (t) => {
  const lic = await h.createLicense({ totalQuota: 1 });
  const [a, b] = (await mintTokens(h, lic, 2)).tokens as [string, string];
  t.equal((await validate(a)).status, 200, 'the one unit is used');
  const refused = await validate(b, 'buy-then-retry');
  t.same([refused.status, refused.body], [400, { success: false, message: MSG.QUOTA, remainingQuota: 0 }], 'quota exhausted');
  t.equal(await recordOf(lic, 'buy-then-retry'), null, 'no record after a refusal');
  await adminOk(h, 'POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 1 });
  const retry = await validate(b, 'buy-then-retry');
  t.same([retry.status, retry.body?.usedQuota, retry.body?.remainingQuota], [200, 2, 0], 'the retry redeems');
  t.equal(await usedOf(lic), 2, 'one unit spent by the retry');
  t.equal((await validate(b, 'buy-then-retry')).text, retry.text, 'and is replayed from now on');
});

t.test('the record lives with the token, and its hash after it', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const [token] = (await mintTokens(h, lic, 1)).tokens as [string];
  t.equal((await validate(token, 'ttl-key')).status, 200);
  const record = await recordOf(lic, 'ttl-key');
  const c = claimsOf(token);
  t.same(record?.value.split('\t'), [c.token_id, String(c.iat * 1000), '1', '4'], 'the record: its token, its iat, the figures answered');
  const pttl = await h.redis.pttl(record?.hash ?? '');
  const life = c.exp * 1000 - Date.now();
  t.ok(pttl >= life, `its hash outlives the token (PTTL ${pttl}, token ${life} ms)`);
  t.ok(pttl <= IDEMPOTENCY_WINDOW_MS, `and lives a window after its last claim (PTTL ${pttl})`);
});

t.test('malformed keys: 400, nothing spent, the token still good; 255 characters are accepted', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const source = new TokenSource(h, lic);
  const token = await source.next();
  const bad: [string, string][] = [
    ['a tab inside', 'abc\tdef'],
    ['256 characters', 'k'.repeat(256)],
    ['a non-ASCII character inside (UTF-8 bytes)', Buffer.from('sipariş-42', 'utf8').toString('latin1')],
    ['a latin1 byte inside', 'caf\xe9-42'],
    ['DEL inside', 'a\x7fb'],
  ];
  for (const [what, key] of bad) {
    const res = await rawValidate(token, key);
    t.equal(res.status, 400, `${what}: 400`);
    t.strictSame(JSON.parse(res.text), BAD_KEY, `${what}: the Idempotency-Key message`);
  }
  const viaFetch = await validate(token, 'tab\there');
  t.same([viaFetch.status, viaFetch.body], [400, BAD_KEY], 'a tab through fetch: 400 as well');
  t.equal(await usedOf(lic), 0, 'nothing spent');

  const long = `${'x'.repeat(254)}!`;
  const ok = await validate(token, long);
  t.same([ok.status, ok.body?.usedQuota], [200, 1], '255 characters: redeemed (the token was not burned by the refusals)');
  t.equal((await validate(token, long)).text, ok.text, 'and replayed');

  // RFC 9110 5.5: whitespace around a field value is not part of it, so " K" on the wire is K
  const spaced = await source.next();
  const k = await validate(spaced, 'padded');
  const leading = await rawValidate(spaced, '  padded');
  t.same([leading.status, leading.text], [200, k.text], 'a leading space on the wire: the key without it, replayed');
  t.equal(await usedOf(lic), 2);
});

// A known limit of the HTTP parser (uWebSockets.js 20.30): it trims bytes >= 0x80 at either
// end of a field value as if they were whitespace, before the service sees the value. So
// "café" arrives as "caf" (and "ü" alone as no key): such a key is read without those bytes.
// Keys are per license, so this can only confuse the license's own clients, whose keys the
// contract says are printable ASCII. This test pins the behaviour, so a parser that keeps
// the bytes (then refused with 400 like a non-ASCII byte inside) shows up here.
t.test('a non-ASCII byte at either end of the key: read without it (the HTTP parser trims it)', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const [a, b] = (await mintTokens(h, lic, 2)).tokens as [string, string];
  const first = await rawValidate(a, Buffer.from('café', 'utf8').toString('latin1'));
  t.equal(first.status, 200, '"café": redeemed');
  t.equal((await validate(a, 'caf')).text, first.text, 'under the key "caf": the same token replays');
  t.same((await validate(b, 'caf')).body, KEY_REUSED, 'and "caf" with another token is 422');
  t.equal(await usedOf(lic), 1, 'one unit spent');
});

t.test('property: valid keys redeem and replay, reused ones are 422, invalid ones 400, never a 5xx', async (t) => {
  const lic = await h.createLicense({ totalQuota: 1000 });
  const source = new TokenSource(h, lic);
  const printable = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
  const unit = fc.oneof(
    { weight: 12, arbitrary: printable },
    { weight: 3, arbitrary: fc.constant(' ') },
    { weight: 1, arbitrary: fc.constantFrom('\t', '\x7f', '\x80', '\xe9', '\xff') },
  );
  const trimmed = (key: string): string => key.replace(/^[ \t]+|[ \t]+$/g, '');
  const keys = fc.oneof(
    fc.string({ unit, minLength: 1, maxLength: 12 }),
    fc.constantFrom('a', 'Z', '~', '!'), // reused on purpose: another token with a key seen before
    fc.string({ unit: printable, minLength: 253, maxLength: 258 }),
    // whitespace alone is no value at all; a non-ASCII byte at either end: the test above
  ).filter((k) => trimmed(k) !== '' && !/^[\x80-\xff]|[\x80-\xff]$/.test(trimmed(k)));
  const seen = new Set<string>();

  const result = await fc.check(fc.asyncProperty(keys, async (key) => {
    const token = await source.next();
    const before = await usedOf(lic);
    const res = await rawValidate(token, key);
    const effective = trimmed(key);
    if (res.status >= 500) throw new Error(`5xx: ${res.status} ${res.text}`);
    if (!KEY_RE.test(effective)) {
      if (res.status !== 400 || res.text !== JSON.stringify(BAD_KEY)) throw new Error(`invalid key: ${res.status} ${res.text}`);
    } else if (seen.has(effective)) {
      if (res.status !== 422 || res.text !== JSON.stringify(KEY_REUSED)) throw new Error(`reused key: ${res.status} ${res.text}`);
    } else {
      if (res.status !== 200 || JSON.parse(res.text).usedQuota !== before + 1) throw new Error(`valid key: ${res.status} ${res.text}`);
      seen.add(effective);
      const replay = await rawValidate(token, key);
      if (replay.status !== 200 || replay.text !== res.text) throw new Error(`replay: ${replay.status} ${replay.text} vs ${res.text}`);
    }
    const after = await usedOf(lic);
    const spent = res.status === 200 ? 1 : 0;
    if (after !== before + spent) throw new Error(`spent ${after - before}, expected ${spent}`);
  }), { seed: FUZZ_SEED, numRuns: 50 });
  t.notOk(result.failed, fc.defaultReportMessage(result) ?? 'property held');
  t.ok(seen.size > 0, `valid keys were generated (${seen.size})`);
});
