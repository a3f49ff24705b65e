import fc from 'fast-check';
import t from 'tap';
import { readEvent } from '../../src/usage/events.js';
import { adminView } from '../helpers/admin.js';
import { eventFields } from '../helpers/events.js';
import { FUZZ_SEED } from '../helpers/fuzzRequests.js';
import { LIVE_COUNTS, startHarness, type TestLicense } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { claimsOf } from '../helpers/jwt.js';
import { documentNamed, jwksOf, receiptDigest, receiptParts, sign, verifiesWith, type SignedDocument } from '../helpers/receipts.js';
import { newSigningKey } from '../helpers/signingKeys.js';
import { TokenSource } from '../helpers/tokens.js';

// POST /api/Signature/sign as a client sees it: the redemption's figures and a receipt that
// verifies offline against /.well-known/jwks.json, whose payload names the documents as sent
// (digests in lower case) and the figures answered; what reached Postgres (the document count
// and the receipt's digest) and the history; a retry with the Idempotency-Key answering the
// identical receipt and spending nothing more; a tampered receipt refused by verification; and
// over random document lists, valid ones redeem and invalid ones are 400 and spend nothing.

const h = await startHarness(t, 'sign-happy', LIVE_COUNTS);
const keys = await jwksOf(h);
const REDEEMED = 'Token doğrulandı, imza kotası düşüldü';
const BAD_DOCUMENTS = { success: false, message: 'Geçersiz istek: documents' };

const usedOf = async (lic: TestLicense): Promise<number> => (await adminView(h, lic.licenseKey)).usedQuota as number;
const rowOf = async (token: string) => (await h.sql`
  select documents, receipt_sha256 from token_redemptions where token_id = ${claimsOf(token).token_id}`)[0];

/** The payload text the receipt must carry, members in the published order. */
function expectedPayload(token: string, documents: SignedDocument[], iat: number, used: number, remaining: number): string {
  const c = claimsOf(token);
  return JSON.stringify({
    typ: 'receipt', iss: h.config.jwtIssuer, jti: c.token_id, firma_id: c.firma_id, imza_tipi: c.imza_tipi,
    documents: documents.map((d) => ({ name: d.name, sha256: d.sha256.toLowerCase() })), iat, used_quota: used, remaining_quota: remaining,
  });
}

t.test('a redemption answers its figures and a receipt that verifies, naming the documents as sent', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, domains: ['imza.ornek.com.tr'] });
  const source = new TokenSource(h, lic);
  const token = await source.next(1);
  const documents = [
    { name: 'İmza belgesi ğüşöç.pdf', sha256: documentNamed('x').sha256.toUpperCase() },
    documentNamed('ek 😀 "tırnak" \\ ters.xml'),
  ];
  const before = Math.floor(Date.now() / 1000);
  const res = await sign(h, { token, origin: 'https://imza.ornek.com.tr', documents });
  const after = Math.ceil(Date.now() / 1000);
  t.equal(res.status, 200, res.text);
  t.match(res.headers.get('content-type') ?? '', /^application\/json/);
  t.same(Object.keys(res.body), ['success', 'message', 'usedQuota', 'remainingQuota', 'receipt'], 'the members, in order');
  t.same([res.body.success, res.body.message, res.body.usedQuota, res.body.remainingQuota], [true, REDEEMED, 1, 9], 'one unit spent');

  const receipt = res.body.receipt as string;
  t.ok(verifiesWith(receipt, keys), 'the receipt verifies with the published key (node:crypto, EdDSA)');
  const { header, text, payload } = receiptParts(receipt);
  t.strictSame(header, { alg: 'EdDSA', typ: 'JWT', kid: keys[0]?.kid }, 'its header names the signing key');
  const iat = payload.iat as number;
  t.ok(iat >= before && iat <= after, `iat is the redemption's second (${iat})`);
  t.equal(text, expectedPayload(token, documents, iat, 1, 9), 'the payload, byte for byte: members in order, digests in lower case');

  const next = await sign(h, { token: await source.next(), origin: 'https://imza.ornek.com.tr', documents: documents.slice(1) });
  t.same([next.status, next.body.usedQuota, next.body.remainingQuota], [200, 2, 8], 'the next redemption counts on');
  t.same([receiptParts(next.body.receipt).payload.used_quota, receiptParts(next.body.receipt).payload.remaining_quota], [2, 8], 'and its receipt says so');
  const validated = await h.validate(await source.next(), 'https://imza.ornek.com.tr');
  t.same([validated.status, validated.body.usedQuota], [200, 3], 'validate spends from the same quota');
  t.equal(await usedOf(lic), 3, 'admin view: three units');
});

t.test('Postgres keeps the document count and the receipt\'s digest; the history shows the count', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const source = new TokenSource(h, lic);
  const signToken = await source.next();
  const validateToken = await source.next();
  const documents = [documentNamed('a.pdf'), documentNamed('b.pdf'), documentNamed('c.pdf')];
  const signed = await sign(h, { token: signToken, documents });
  t.equal(signed.status, 200, signed.text);
  t.equal((await h.validate(validateToken)).status, 200);
  await h.drainWorker();

  t.same({ ...await rowOf(signToken) }, { documents: 3, receipt_sha256: receiptDigest(signed.body.receipt) }, 'sign: 3 documents, the digest of the payload bytes');
  t.same({ ...await rowOf(validateToken) }, { documents: null, receipt_sha256: null }, 'validate: neither');
  const found = await h.sql`select token_id from token_redemptions where receipt_sha256 = ${receiptDigest(signed.body.receipt)}`;
  t.same(found.map((r) => r.token_id), [claimsOf(signToken).token_id], 'the receipt is found by its digest');

  const history = await h.history(lic.licenseKey, await source.accessTokenOf());
  t.equal(history.status, 200, history.text);
  const items = history.body.data.items as Record<string, unknown>[];
  const byToken = new Map(items.map((i) => [i.tokenId, i]));
  t.same(Object.keys(byToken.get(claimsOf(signToken).token_id) ?? {}).sort(), ['documents', 'imzaTipi', 'origin', 'tokenId', 'usedAt'], 'a sign\'s item');
  t.equal(byToken.get(claimsOf(signToken).token_id)?.documents, 3, 'with its document count');
  t.same(Object.keys(byToken.get(claimsOf(validateToken).token_id) ?? {}).sort(), ['imzaTipi', 'origin', 'tokenId', 'usedAt'], 'a validate\'s item as published');

  // the worker may see an event again (a reclaim, a replayed dead letter): the same
  // redemption, at the time it was made, writes nothing twice and is no second redemption
  const c = claimsOf(signToken);
  const [made] = await h.sql`select (extract(epoch from used_at) * 1000)::int8::text as at_ms from token_redemptions where token_id = ${c.token_id}`;
  const again = [...eventFields({ tokenId: c.token_id, firmaId: c.firma_id, imzaTipi: 0, atMs: Number(made?.at_ms), issuedMs: c.iat * 1000 }),
    'r', receiptParts(signed.body.receipt).text];
  t.equal(readEvent(again)?.tokenId, c.token_id, 'the event as redeem.lua writes it');
  const deadBefore = await h.redis.xlen(h.keys.deadLetters);
  await h.redis.xadd(h.keys.forLicense(c.firma_id).stream, '*', ...again);
  await h.drainWorker();
  t.equal(await h.redis.xlen(h.keys.deadLetters), deadBefore, 'the event again is no dead letter (no second redemption)');
  const [{ n, used }] = await h.sql`select (select count(*)::int from token_redemptions where firma_id = ${c.firma_id}) as n,
    (select used_quota::int from licenses where firma_id = ${c.firma_id}) as used` as unknown as [{ n: number; used: number }];
  t.same([n, used], [2, 2], 'the event again: still two rows, two units in Postgres');
});

t.test('an Idempotency-Key retry answers the identical receipt and spends one unit', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const source = new TokenSource(h, lic);
  const token = await source.next();
  const documents = [documentNamed('sözleşme.pdf')];
  const answers = await Promise.all(Array.from({ length: 10 }, () => sign(h, { token, documents }, 'belge-42')));
  t.same(answers.map((a) => a.status), Array(10).fill(200), 'every retry is 200');
  const first = answers[0] as Answer;
  t.ok(answers.every((a) => a.text === first.text), 'every body, receipt included, is byte-identical');
  t.equal(await usedOf(lic), 1, 'one unit spent');

  t.equal((await sign(h, { token: await source.next(), documents })).body.usedQuota, 2, 'another redemption');
  const later = await sign(h, { token, documents: [{ ...documents[0], sha256: (documents[0] as SignedDocument).sha256.toUpperCase() }] }, 'belge-42');
  t.equal(later.text, first.text, 'a later retry (digest in upper case: the same request) answers the first receipt');
  t.same([later.body.usedQuota, await usedOf(lic)], [1, 2], 'with the first figures, spending nothing');
  await h.drainWorker();
  const rows = await h.sql`select receipt_sha256 from token_redemptions where token_id = ${claimsOf(token).token_id}`;
  t.same(rows.map((r) => r.receipt_sha256), [receiptDigest(first.body.receipt)], 'one row, with the receipt answered');
});

t.test('a license of over 10^14 units: the receipt and a keyed retry carry its exact figures', async (t) => {
  const lic = await h.createLicense({ totalQuota: 1e12 });
  for (let i = 0; i < 100; i++) {
    const added = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 1e12 });
    if (added.status !== 200) t.fail(`purchase ${i}: ${added.status} ${added.text}`);
  }
  const total = 101e12;
  const token = await new TokenSource(h, lic).next();
  const documents = [documentNamed('büyük.pdf')];
  const first = await sign(h, { token, documents }, 'buyuk-1');
  t.same([first.status, first.body.usedQuota, first.body.remainingQuota], [200, 1, total - 1], 'the answer\'s figures');
  const { payload } = receiptParts(first.body.receipt);
  t.same([payload.used_quota, payload.remaining_quota], [1, total - 1], 'the receipt\'s figures, in full');
  const retry = await sign(h, { token, documents }, 'buyuk-1');
  t.same([retry.status, retry.text], [200, first.text], 'the keyed retry answers the first body');
  t.equal(await usedOf(lic), 1, 'one unit spent');
});

t.test('a tampered receipt, or one signed by another key, fails verification', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const res = await sign(h, { token: await new TokenSource(h, lic).next(), documents: [documentNamed('a.pdf')] });
  const receipt = res.body.receipt as string;
  t.ok(verifiesWith(receipt, keys), 'the receipt as answered verifies');
  const [hd, , sig] = receipt.split('.') as [string, string, string];
  const { payload } = receiptParts(receipt);
  const forged = (p: Record<string, unknown>) => `${hd}.${Buffer.from(JSON.stringify(p)).toString('base64url')}.${sig}`;
  t.notOk(verifiesWith(forged({ ...payload, remaining_quota: 1000 }), keys), 'a figure changed');
  t.notOk(verifiesWith(forged({ ...payload, documents: [{ name: 'b.pdf', sha256: 'f'.repeat(64) }] }), keys), 'a document changed');
  const flipped = `${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`;
  t.notOk(verifiesWith(`${receipt.split('.').slice(0, 2).join('.')}.${flipped}`, keys), 'the signature changed');

  // the same payload signed by a key the service does not publish, under the published kid
  const { createPrivateKey, sign: edSign } = await import('node:crypto');
  const other = createPrivateKey({ key: Buffer.from(newSigningKey(), 'base64'), format: 'der', type: 'pkcs8' });
  const input = receipt.split('.').slice(0, 2).join('.');
  t.notOk(verifiesWith(`${input}.${edSign(null, Buffer.from(input), other).toString('base64url')}`, keys), 'another key\'s signature');
});

t.test('100 documents of 255 characters redeem; the receipt names them all', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const documents = Array.from({ length: 100 }, (_, i) => documentNamed(`${String(i).padStart(3, '0')}${'n'.repeat(252)}`));
  const res = await sign(h, { token: await new TokenSource(h, lic).next(), documents });
  t.equal(res.status, 200, res.text.slice(0, 200));
  t.same(receiptParts(res.body.receipt).payload.documents, documents, 'every document, in order');
});

t.test('property: valid document lists redeem and are signed as sent; invalid ones are 400 and spend nothing', async (t) => {
  const lic = await h.createLicense({ totalQuota: 1000 });
  const source = new TokenSource(h, lic);
  const unit = fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...'aZ09 -_.()') }, { weight: 2, arbitrary: fc.constantFrom('ğ', 'İ', 'ş', '"', '\\', '/', '😀', '\u2028') });
  const hex = fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 64, maxLength: 64 });
  const good = fc.record({ name: fc.string({ unit, minLength: 1, maxLength: 40 }), sha256: hex });
  const bad: fc.Arbitrary<unknown> = fc.oneof(
    fc.record({ name: fc.constant(''), sha256: hex }),
    fc.record({ name: fc.constantFrom('a\u0000b', 'tab\there', 'line\nbreak', '\u007f', 'lone \ud800', 'x'.repeat(256)), sha256: hex }),
    fc.record({ name: fc.constant('a.pdf'), sha256: fc.oneof(fc.constantFrom('', 'g'.repeat(64), `${'a'.repeat(64)} `), hex.map((s) => s.slice(1)), hex.map((s) => `${s}0`)) }),
    fc.constantFrom({ name: 'a.pdf' }, { sha256: 'a'.repeat(64) }, { name: 'a.pdf', sha256: 'a'.repeat(64), size: 1 }, { name: 7, sha256: 'a'.repeat(64) }, 'a.pdf', null, 42, []),
  );
  const lists = fc.oneof(
    { weight: 3, arbitrary: fc.array(good, { minLength: 1, maxLength: 100 }).map((documents) => ({ documents, valid: true })) },
    { weight: 2, arbitrary: fc.tuple(fc.array(good, { maxLength: 5 }), bad, fc.array(good, { maxLength: 5 })).map(([a, b, c]) => ({ documents: [...a, b, ...c] as unknown, valid: false })) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>([], {}, 'a.pdf', null, 0, undefined).map((documents) => ({ documents, valid: false })) },
    { weight: 1, arbitrary: fc.array(good, { minLength: 101, maxLength: 103 }).map((documents) => ({ documents: documents as unknown, valid: false })) },
  );
  let redeemed = 0;
  let refused = 0;
  const result = await fc.check(fc.asyncProperty(lists, async ({ documents, valid }) => {
    const token = await source.next();
    const before = await usedOf(lic);
    const res = await sign(h, documents === undefined ? { token } : { token, documents });
    const after = await usedOf(lic);
    if (valid) {
      if (res.status !== 200 || res.body.usedQuota !== before + 1 || after !== before + 1) throw new Error(`valid: ${res.status} ${res.text.slice(0, 200)}`);
      const sent = (documents as SignedDocument[]).map((d) => ({ name: d.name, sha256: d.sha256.toLowerCase() }));
      if (JSON.stringify(receiptParts(res.body.receipt).payload.documents) !== JSON.stringify(sent)) throw new Error('the receipt names other documents');
      if (!verifiesWith(res.body.receipt, keys)) throw new Error('the receipt does not verify');
      redeemed++;
    } else {
      if (res.status !== 400 || res.text !== JSON.stringify(BAD_DOCUMENTS)) throw new Error(`invalid: ${res.status} ${res.text.slice(0, 200)}`);
      if (after !== before) throw new Error(`an invalid list spent ${after - before}`);
      const retry = await h.validate(token);
      if (retry.status !== 200) throw new Error(`the token was burned: ${retry.status} ${retry.text}`);
      refused++;
    }
  }), { seed: FUZZ_SEED, numRuns: 40 });
  t.notOk(result.failed, fc.defaultReportMessage(result) ?? 'property held');
  t.ok(redeemed > 0 && refused > 0, `both sides tried (${redeemed} redeemed, ${refused} refused)`);
});
