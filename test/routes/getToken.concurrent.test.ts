import t, { type Test } from 'tap';
import { addressBucket } from '../../src/http/clientAddress.js';
import { startHarness, type Harness, type TestLicense } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';

// Logins sent at once from one address, as a web application logs in for many companies
// from its server: the failure budgets (per address and per key) hold places for attempts
// still being checked, and a correct login waits for those places to come back instead of
// being refused for them. Only failures hold attempts back or refuse them, so guessing
// stays bounded by the budgets. Every request comes from one address new to the service
// (the harness's own, with TRUST_PROXY unset), through the one port of the service as
// `npm start` runs it.

const LICENSE_VALIDATION = '/api/License/validate';

type Kind = 'get-token' | 'license validation';

/** A login of either kind (both count toward the key's tokens), and what it was. */
async function login(h: Harness, lic: TestLicense, kind: Kind, password = lic.password): Promise<[Kind, Answer]> {
  const answer = kind === 'get-token'
    ? await h.getToken(lic.licenseKey, password, 0)
    : await h.request('POST', LICENSE_VALIDATION, { licenseKey: lic.licenseKey, password });
  return [kind, answer];
}

/** Half of each. */
const kindOf = (n: number): Kind => n % 2 === 0 ? 'get-token' : 'license validation';

function statusCounts(answers: [Kind, Answer][]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const [, a] of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

/** Each answer a 200 of its kind: the token pair, or a license token. */
function expectAllServed(t: Test, answers: [Kind, Answer][], what: string): void {
  t.same(statusCounts(answers), { 200: answers.length }, `${what}: every one 200`);
  for (const [kind, a] of answers) {
    const served = kind === 'get-token' ? typeof a.body?.signToken === 'string' : typeof a.body?.licenseToken === 'string';
    if (!served) t.fail(`${what}: a ${kind} answered ${a.status} ${a.text.slice(0, 200)}`);
  }
}

t.test('defaults: 100 correct logins at once over 10 licenses, 10 per license, all 200', async (t) => {
  const h = await startHarness(t, 'gt-concurrent');
  const licenses = await Promise.all(Array.from({ length: 10 }, () => h.createLicense({ totalQuota: 50 })));
  // ten per license: the published limit of tokens per key a minute, exactly
  // license i % 10, five logins of each kind per license
  const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => login(h, licenses[i % 10] as TestLicense, kindOf(Math.floor(i / 10)))));
  expectAllServed(t, answers, '100 at once from one new address');
  for (const lic of licenses) {
    t.equal((await h.checkQuota(lic.licenseKey)).body?.data?.remainingQuota, 50, 'no quota spent by a login');
  }
  const [, eleventh] = await login(h, licenses[0] as TestLicense, 'get-token');
  t.equal(eleventh.status, 429, 'the 11th login at one key in the minute: the published limit, as before');
  t.equal(eleventh.headers.get('ratelimit-policy'), '"get-token";q=10;w=60', 'refused by the tokens-issued limit, not a failure budget');
});

t.test('RATE_GET_TOKEN_PER_MIN=0: 40 correct logins at once for one license, all 200', async (t) => {
  const h = await startHarness(t, 'gt-concurrent-one', { RATE_GET_TOKEN_PER_MIN: '0' });
  const lic = await h.createLicense();
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => login(h, lic, kindOf(i))));
  expectAllServed(t, answers, '40 at once, one key, one new address');
});

t.test('defaults: guessing at once is still bounded by the failure budgets', async (t) => {
  const h = await startHarness(t, 'gt-concurrent-guess', { RATE_GET_TOKEN_PER_MIN: '0' });
  const licenses = await Promise.all(Array.from({ length: 10 }, () => h.createLicense()));
  const started = Date.now();
  // 100 wrong passwords at once over 10 keys from one address: its budget is 30 at once, then one every 2 s
  const guesses = await Promise.all(Array.from({ length: 100 }, (_, i) => login(h, licenses[i % 10] as TestLicense, kindOf(i), `yanlış ${i}`)));
  const elapsedMs = Date.now() - started;
  const counts = statusCounts(guesses);
  t.same(Object.keys(counts).sort(), ['401', '429'].filter((s) => counts[Number(s)] !== undefined), `only 401 and 429 (${JSON.stringify(counts)})`);
  const checked = counts[401] ?? 0;
  const bound = 30 + Math.ceil(elapsedMs / 2000);
  t.ok(checked >= 30 && checked <= bound, `${checked} guesses checked in ${elapsedMs} ms: at least the 30 at once, at most ${bound} (30 at once and one every 2 s)`);
  t.ok((counts[429] ?? 0) > 0, 'the rest refused');
  for (const [, a] of guesses.filter(([, g]) => g.status === 429)) {
    t.match(a.headers.get('ratelimit-policy') ?? '', /^"failed-logins(-key)?";/, 'refused by a failure budget');
  }
  const address = h.keys.failures(addressBucket('127.0.0.1'));
  t.equal(await h.redis.exists(h.keys.pendingOf(address)), 0, 'every checked guess settled: no place left pending');
  t.ok(await h.redis.pttl(address) > 0, 'the failures stay counted');
});
