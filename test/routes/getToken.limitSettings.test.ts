import { randomUUID } from 'node:crypto';
import t from 'tap';
import { addressBucket } from '../../src/http/clientAddress.js';
import { expectHeldOff, expectIssued, loginFrom as from, statusCounts } from '../helpers/getTokenLimits.js';
import { NO_RATE_LIMITS, startHarness, type TestLicense } from '../helpers/harness.js';
import { expectCodedError } from '../helpers/shapes.js';

// get-token's limits under the settings that change them (the limits themselves:
// getToken.limits.test.ts): past a budget an attempt held up to GET_TOKEN_MAX_DELAY_MS, every
// RATE_* at 0, TRUST_PROXY=0 ignoring X-Forwarded-For, GET_TOKEN_TRUST_DAYS=0 trusting no
// address.

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
