import { randomUUID } from 'node:crypto';
import t from 'tap';
import { addressBucket } from '../../src/http/clientAddress.js';
import { NO_RATE_LIMITS, startHarness, type Harness, type TestLicense } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { expectCodedError, expectRateLimited, type Asserts } from '../helpers/shapes.js';

// get-token's limits as the people behind one address and the holders of a key see them
// (src/licenses/loginLimits.ts): tokens issued per license key (RATE_GET_TOKEN_PER_MIN: correct
// credentials only), failed attempts per license key from addresses not trusted there
// (RATE_GET_TOKEN_KEY_FAILURES_PER_MIN) and per client address (RATE_GET_TOKEN_FAILURES_PER_MIN),
// an address trusted at a key once it got a token for it (GET_TOKEN_TRUST_DAYS), and past a
// budget an attempt held for its turn up to GET_TOKEN_MAX_DELAY_MS before it is refused.
// Addresses are X-Forwarded-For entries behind TRUST_PROXY=1.

function from(h: Harness, address: string | null, licenseKey: string, password: string, imzaTipi = 0): Promise<Answer> {
  const headers: Record<string, string> = address === null ? {} : { 'x-forwarded-for': address };
  return h.request('POST', '/api/v1/auth/get-token', { licenseKey, password, imzaTipi }, headers);
}

function statusCounts(answers: Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

function expectIssued(t: Asserts, res: Answer, what: string): void {
  t.equal(res.status, 200, `${what}: 200 (${res.text.slice(0, 160)})`);
  t.equal(res.body?.success, true, `${what}: success`);
}

/** A 429 of a failure budget: the published shape, and the budget's policy name in RateLimit-Policy. */
function expectHeldOff(t: Asserts, res: Answer, policy: 'failed-logins' | 'failed-logins-key', what: string): void {
  expectRateLimited(t, res, what);
  t.match(res.headers.get('ratelimit-policy') ?? '', new RegExp(`^"${policy}";`), `${what}: RateLimit-Policy "${policy}"`);
}

t.test('correct credentials are not refused for other clients\' failures (defaults)', async (t) => {
  const h = await startHarness(t, 'gtlim-nat', { TRUST_PROXY: '1' });
  const nat = '203.0.113.7'; // a hospital's NAT, or the web application every company logs in through
  const colleague = await h.createLicense();
  const company = await h.createLicense();
  const newcomer = await h.createLicense();
  expectIssued(t, await from(h, nat, colleague.licenseKey, colleague.password), 'a colleague logs in (the address is now trusted at that key)');
  expectIssued(t, await from(h, nat, company.licenseKey, company.password), 'another company through the same address');

  // 60 failures at once from the address, as many people mistyping: 8 at the colleague's key,
  // 8 at the company's, the others at keys that do not exist (past the address's budget of 30)
  const failures = await Promise.all(Array.from({ length: 60 }, (_, i) => {
    const key = i % 5 === 0 && i < 40 ? colleague.licenseKey : i % 5 === 1 && i < 40 ? company.licenseKey : randomUUID();
    return from(h, nat, key, `mistyped ${i}`);
  }));
  const counts = statusCounts(failures);
  t.same(Object.keys(counts).sort(), Object.keys(counts).filter((s) => s === '401' || s === '429').sort(), `only 401 and 429 (${JSON.stringify(counts)})`);
  t.ok((counts[429] ?? 0) > 0, `the address's budget was spent: some attempts refused (${JSON.stringify(counts)})`);

  expectIssued(t, await from(h, nat, colleague.licenseKey, colleague.password), 'the colleague, right after: not refused');
  expectIssued(t, await from(h, nat, company.licenseKey, company.password), 'the other company: not refused');
  // a first login from the address (not trusted at its key), behind the spent budget: held for its turn, then served
  expectIssued(t, await from(h, nat, newcomer.licenseKey, newcomer.password), 'a first login from that address: late, not refused');
});

t.test('a stranger who knows a key cannot lock its holder out', async (t) => {
  const h = await startHarness(t, 'gtlim-stranger', { TRUST_PROXY: '1', GET_TOKEN_MAX_DELAY_MS: '0' });
  const lic = await h.createLicense({ totalQuota: 100 });
  const holder = '192.0.2.10';
  expectIssued(t, await from(h, holder, lic.licenseKey, lic.password), 'the holder logs in once');

  // strangers at many addresses, more than the key's budget of failures (10), all at once
  const strangers = await Promise.all(Array.from({ length: 30 }, (_, i) => from(h, `198.51.100.${i + 1}`, lic.licenseKey, `guess ${i}`)));
  const counts = statusCounts(strangers);
  t.equal(counts[401], 10, `exactly the key's budget of guesses was checked (${JSON.stringify(counts)})`);
  t.equal(counts[429], 20, 'the others refused');
  for (const a of strangers.filter((x) => x.status === 429)) expectHeldOff(t, a, 'failed-logins-key', 'a stranger past the key\'s budget');
  expectHeldOff(t, await from(h, '198.51.100.200', lic.licenseKey, lic.password),
    'failed-logins-key', 'even the right password from an address never seen at the key: the guess is not checked');

  // the holder's address is trusted at the key: nobody else's failures count against it
  for (let i = 1; i < 10; i++) expectIssued(t, await from(h, holder, lic.licenseKey, lic.password, i % 2), `the holder's login ${i + 1}`);
  // the published limit (10 a minute) is the holder's own: the strangers used none of it
  const eleventh = await from(h, holder, lic.licenseKey, lic.password);
  expectRateLimited(t, eleventh, 'the holder\'s 11th token in the minute');
  t.equal(eleventh.headers.get('ratelimit-policy'), '"get-token";q=10;w=60', 'refused by the published limit');
});

t.test('the published limit counts the holder\'s own tokens: RATE_GET_TOKEN_PER_MIN=3', async (t) => {
  const h = await startHarness(t, 'gtlim-tokens', { ...NO_RATE_LIMITS, RATE_GET_TOKEN_PER_MIN: '3', TRUST_PROXY: '1' });

  t.test('wrong passwords do not use it up; the 4th token in the window is refused', async (t) => {
    const lic = await h.createLicense();
    const other = await h.createLicense();
    for (let i = 0; i < 6; i++) expectCodedError(t, await from(h, `198.51.100.${i + 1}`, lic.licenseKey, `guess ${i}`), 401, 'INVALID_CREDENTIALS');
    for (let i = 0; i < 3; i++) expectIssued(t, await from(h, '192.0.2.10', lic.licenseKey, lic.password, i % 2), `token ${i + 1}`);
    const fourth = await from(h, '192.0.2.10', lic.licenseKey, lic.password);
    expectRateLimited(t, fourth, 'the 4th');
    t.equal(fourth.headers.get('ratelimit-policy'), '"get-token";q=3;w=60', 'the published limit\'s policy');
    expectRateLimited(t, await from(h, '192.0.2.99', lic.licenseKey, 'wrong'), 'a wrong password too, once the tokens are issued (no hash spent)');
    expectIssued(t, await from(h, '192.0.2.10', other.licenseKey, other.password), 'another license is not limited');
    await h.drainWorker();
    const rows = await h.sql`select count(*)::int as n from sign_tokens where firma_id = ${lic.firmaId}`;
    t.equal(rows[0]?.n, 3, 'a refused get-token issues no sign token');
  });

  t.test('concurrent correct logins: exactly the limit gets through', async (t) => {
    const lic = await h.createLicense();
    const answers = await Promise.all(Array.from({ length: 9 }, () => from(h, '192.0.2.11', lic.licenseKey, lic.password)));
    t.same(answers.map((a) => a.status).sort(), [200, 200, 200, 429, 429, 429, 429, 429, 429]);
  });
});

t.test('guessing is bounded per key and per address (GET_TOKEN_MAX_DELAY_MS=0: refused at once past a budget)', async (t) => {
  const h = await startHarness(t, 'gtlim-guess', {
    ...NO_RATE_LIMITS, TRUST_PROXY: '1', GET_TOKEN_MAX_DELAY_MS: '0',
    RATE_GET_TOKEN_FAILURES_PER_MIN: '6', RATE_GET_TOKEN_KEY_FAILURES_PER_MIN: '4',
  });

  t.test('per address, across keys: 6 failures, then refused before any look-up or hash', async (t) => {
    const lic = await h.createLicense();
    const trustedAt = await h.createLicense();
    const guesser = '203.0.113.50';
    expectIssued(t, await from(h, guesser, trustedAt.licenseKey, trustedAt.password), 'the address logs in to one key (trusted there)');
    const burst = await Promise.all(Array.from({ length: 20 }, () => from(h, guesser, randomUUID(), 'guess')));
    t.same(statusCounts(burst), { 401: 6, 429: 14 }, 'a concurrent burst of unknown keys: exactly 6 checked');
    expectHeldOff(t, await from(h, guesser, lic.licenseKey, 'wrong'), 'failed-logins', 'a known key the address is not trusted at');
    expectHeldOff(t, await from(h, guesser, lic.licenseKey, lic.password), 'failed-logins', 'its right password too: it cannot be told from a guess');
    // the proxy appends the real peer on the right: whatever the client puts left of it is not trusted
    expectHeldOff(t, await from(h, `192.0.2.77, ${guesser}`, randomUUID(), 'x'), 'failed-logins', 'a spoofed left-hand entry');
    expectIssued(t, await from(h, guesser, trustedAt.licenseKey, trustedAt.password), 'the key it is trusted at: served');
    expectIssued(t, await from(h, '192.0.2.23', lic.licenseKey, lic.password), 'another address: served');
    t.equal(await h.redis.exists(h.keys.failures(addressBucket('127.0.0.1'))), 0, 'nothing counted against the proxy (127.0.0.1)');
    const ttl = await h.redis.pttl(h.keys.failures(addressBucket(guesser)));
    t.ok(ttl > 0 && ttl <= 60_000, `the address's budget expires within the window (${ttl} ms)`);
  });

  t.test('per key, across addresses: 4 failures, then refused; a trusted address keeps its own budget', async (t) => {
    const lic = await h.createLicense();
    const holder = '192.0.2.40';
    expectIssued(t, await from(h, holder, lic.licenseKey, lic.password), 'the holder (trusted from now on)');
    const guesses = await Promise.all(Array.from({ length: 12 }, (_, i) => from(h, `198.51.100.${i + 1}`, lic.licenseKey, `guess ${i}`)));
    t.same(statusCounts(guesses), { 401: 4, 429: 8 }, 'twelve addresses, one key: exactly 4 guesses checked');
    for (let i = 0; i < 4; i++) expectCodedError(t, await from(h, holder, lic.licenseKey, `holder mistypes ${i}`), 401, 'INVALID_CREDENTIALS');
    expectHeldOff(t, await from(h, holder, lic.licenseKey, 'holder mistypes 5'), 'failed-logins-key', 'the trusted address past its own 4');
    const ttl = await h.redis.pttl(h.keys.keyFailures(lic.licenseKey));
    t.ok(ttl > 0 && ttl <= 60_000, `the key's budget expires within the window (${ttl} ms)`);
  });

  t.test('a login that checks out gives its place back', async (t) => {
    const lic = await h.createLicense();
    for (let i = 0; i < 8; i++) expectIssued(t, await from(h, `192.0.2.${100 + i}`, lic.licenseKey, lic.password), `login ${i + 1} from a new address`);
    expectCodedError(t, await from(h, '198.51.100.77', lic.licenseKey, 'wrong'), 401, 'INVALID_CREDENTIALS', 'a wrong password after 8 logins: still checked');
  });
});

t.test('past a budget an attempt is held, not refused, up to GET_TOKEN_MAX_DELAY_MS', async (t) => {
  // 60 per minute: one more attempt every second past the budget
  const h = await startHarness(t, 'gtlim-slow', {
    ...NO_RATE_LIMITS, TRUST_PROXY: '1', RATE_GET_TOKEN_KEY_FAILURES_PER_MIN: '60', GET_TOKEN_MAX_DELAY_MS: '3000',
  });
  const lic = await h.createLicense();
  // The budget gains one attempt a second while the burst arrives: on a loaded machine, whose
  // 80 requests take a second or two to arrive, a few more are checked. The burst is large
  // enough that some are always more than 3 s away.
  const burst = await Promise.all(Array.from({ length: 80 }, (_, i) => from(h, `198.51.100.${i + 1}`, lic.licenseKey, `guess ${i}`)));
  const counts = statusCounts(burst);
  t.same(Object.keys(counts).sort(), ['401', '429'], `checked or refused, nothing else (${JSON.stringify(counts)})`);
  t.ok((counts[401] ?? 0) >= 63 && (counts[401] ?? 0) <= 70, `60 at once and 3 or more held for their turn, all checked (${counts[401]})`);
  t.ok((counts[429] ?? 0) >= 10, `the ones more than 3 s away refused (${counts[429]})`);
  expectIssued(t, await from(h, '192.0.2.1', lic.licenseKey, lic.password), 'the holder, from an address never seen: late, then served');
});

t.test('every RATE_* at 0: no limit at all', async (t) => {
  const h = await startHarness(t, 'gtlim-off', { ...NO_RATE_LIMITS, GET_TOKEN_MAX_DELAY_MS: '0' });
  const lic = await h.createLicense({ totalQuota: 100 });
  const failures = await Promise.all(Array.from({ length: 40 }, (_, i) => h.getToken(i % 2 === 0 ? lic.licenseKey : randomUUID(), `wrong ${i}`)));
  t.same(statusCounts(failures), { 401: 40 }, '40 failures from one address, at once: all checked');
  for (let i = 0; i < 12; i++) expectIssued(t, await h.getToken(lic.licenseKey, lic.password, i % 2), `login ${i + 1} (the default limit is 10)`);
  t.equal(await h.redis.exists(h.keys.failures(addressBucket('127.0.0.1')), h.keys.keyFailures(lic.licenseKey), h.keys.rateGetToken(lic.licenseKey)), 0,
    'nothing counted in Redis');
});

t.test('TRUST_PROXY=0 (default): X-Forwarded-For is ignored, every failure counts for the peer', async (t) => {
  const h = await startHarness(t, 'gtlim-noxff', { ...NO_RATE_LIMITS, RATE_GET_TOKEN_FAILURES_PER_MIN: '5', GET_TOKEN_MAX_DELAY_MS: '0' });
  for (let i = 0; i < 5; i++) {
    // a new forwarded address every time: it must not help
    expectCodedError(t, await from(h, `203.0.113.${10 + i}`, randomUUID(), `wrong-${i}`), 401, 'INVALID_CREDENTIALS');
  }
  expectHeldOff(t, await from(h, '203.0.113.99', randomUUID(), 'wrong'), 'failed-logins', '6th failure, yet another forwarded address');
  t.equal(await h.redis.exists(h.keys.failures(addressBucket('127.0.0.1'))), 1, 'counted for 127.0.0.1');
  t.same(await h.redis.keys(h.keys.failures('203.*')), [], 'nothing counted for a forwarded address');
});

t.test('GET_TOKEN_TRUST_DAYS=0: no address is trusted, the holder shares the key\'s budget', async (t) => {
  const h = await startHarness(t, 'gtlim-notrust', {
    ...NO_RATE_LIMITS, TRUST_PROXY: '1', GET_TOKEN_TRUST_DAYS: '0', GET_TOKEN_MAX_DELAY_MS: '0', RATE_GET_TOKEN_KEY_FAILURES_PER_MIN: '3',
  });
  const lic: TestLicense = await h.createLicense();
  expectIssued(t, await from(h, '192.0.2.10', lic.licenseKey, lic.password), 'the holder logs in');
  for (let i = 0; i < 3; i++) await from(h, `198.51.100.${i + 1}`, lic.licenseKey, `guess ${i}`);
  expectHeldOff(t, await from(h, '192.0.2.10', lic.licenseKey, lic.password), 'failed-logins-key', 'the holder, untrusted, behind the spent budget');
  t.equal(await h.redis.exists(h.keys.trustedAddresses(lic.licenseKey)), 0, 'no trusted address kept');
});
