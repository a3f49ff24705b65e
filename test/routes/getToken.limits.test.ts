import { randomUUID } from 'node:crypto';
import t from 'tap';
import { addressBucket } from '../../src/http/clientAddress.js';
import { expectHeldOff, expectIssued, loginFrom as from, statusCounts } from '../helpers/getTokenLimits.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { expectCodedError, expectRateLimited } from '../helpers/shapes.js';

// get-token's limits as the people behind one address and the holders of a key see them
// (src/licenses/loginLimits.ts): tokens issued per license key (RATE_GET_TOKEN_PER_MIN: correct
// credentials only), failed attempts per license key from addresses not trusted there
// (RATE_GET_TOKEN_KEY_FAILURES_PER_MIN) and per client address (RATE_GET_TOKEN_FAILURES_PER_MIN),
// an address trusted at a key once it got a token for it (GET_TOKEN_TRUST_DAYS), and past a
// budget an attempt held for its turn up to GET_TOKEN_MAX_DELAY_MS before it is refused.
// Addresses are X-Forwarded-For entries behind TRUST_PROXY=1.
// The settings that change them (a held attempt, every limit off, no proxy, no trusted
// address): getToken.limitSettings.test.ts, a file of its own so that each stays well within
// a test file's time on a loaded machine (every login is an argon2id verification).

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

  t.test('a login served while its key is fenced (an admin change in flight) took no place, and gives none back', async (t) => {
    const lic = await h.createLicense();
    const guesses = await Promise.all(Array.from({ length: 4 }, (_, i) => from(h, `198.51.100.${20 + i}`, lic.licenseKey, `guess ${i}`)));
    t.same(statusCounts(guesses), { 401: 4 }, 'the key\'s 4 failures');
    // fenced as an admin change does (lua/fence.lua) until its deadline: the login is served from Postgres, ungated
    const credentials = h.keys.credentials(lic.licenseKey);
    await h.redis.hset(credentials, 'z', '1', 'zd', String(Date.now() + 60_000));
    expectIssued(t, await from(h, '192.0.2.200', lic.licenseKey, lic.password), 'the holder, while fenced');
    await h.redis.hdel(credentials, 'z', 'zd');
    expectHeldOff(t, await from(h, '198.51.100.30', lic.licenseKey, 'guess 5'), 'failed-logins-key', 'the 5th guess: still refused');
  });

  t.test('a login that checks out gives its place back', async (t) => {
    const lic = await h.createLicense();
    for (let i = 0; i < 8; i++) expectIssued(t, await from(h, `192.0.2.${100 + i}`, lic.licenseKey, lic.password), `login ${i + 1} from a new address`);
    expectCodedError(t, await from(h, '198.51.100.77', lic.licenseKey, 'wrong'), 401, 'INVALID_CREDENTIALS', 'a wrong password after 8 logins: still checked');
  });
});
