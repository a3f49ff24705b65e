import { randomUUID } from 'node:crypto';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { craftJwt, decodeJwt, HS256_HEADER } from '../helpers/jwt.js';
import { expectCodedError, MSG, type Asserts } from '../helpers/shapes.js';
import { getTokenPair, mintTokens } from '../helpers/tokens.js';

// The RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers) on every
// answer that came from the script call counting a limit, 429s and refusals included; none on
// answers decided before that call, and none when the limit is 0. The five limits count per
// company, per license or per license key, and each test uses licenses of its own, so one
// service with those five on serves them (the failed-login budgets, per address and per key,
// and every limit off get services of their own).

interface Counted { name: string; q: number; w: number; r: number; t: number }

/**
 * A structured-field item (RFC 8941): an sf-string with integer parameters, exactly the
 * `keys` (`"name";q=N;w=N`, `"name";r=N;t=N`); throws on anything else, a list of two included.
 */
function sfItem(value: string, keys: [string, string]): { name: string; params: Record<string, number> } {
  const m = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"((?:; *[a-z*][a-z0-9_.*-]*=-?\d{1,15})*)$/.exec(value);
  if (m === null) throw new Error(`not an sf-item with integer parameters: ${JSON.stringify(value)}`);
  const params = [...(m[2] as string).matchAll(/; *([a-z*][a-z0-9_.*-]*)=(-?\d+)/g)].map(([, k, v]) => [k as string, Number(v)] as const);
  if (params.map(([k]) => k).sort().join() !== [...keys].sort().join()) {
    throw new Error(`parameters must be ${keys.join(',')}, once each: ${JSON.stringify(value)}`);
  }
  return { name: (m[1] as string).replace(/\\(["\\])/g, '$1'), params: Object.fromEntries(params) };
}

/** Both fields parsed, or null when neither is there; throws when only one is, or one is malformed. */
function fieldsOf(res: Answer): Counted | null {
  const policy = res.headers.get('ratelimit-policy');
  const limit = res.headers.get('ratelimit');
  if (policy === null && limit === null) return null;
  if (policy === null || limit === null) throw new Error(`one field without the other: ${policy} / ${limit}`);
  const p = sfItem(policy, ['q', 'w']);
  const l = sfItem(limit, ['r', 't']);
  if (p.name !== l.name) throw new Error(`names differ: ${policy} / ${limit}`);
  return { name: p.name, q: p.params.q as number, w: p.params.w as number, r: l.params.r as number, t: l.params.t as number };
}

/** The fields of a counted answer: policy exactly name;q;w=60, r as given, t in 1..60. */
function expectFields(t: Asserts, res: Answer, name: string, q: number, r: number, what: string): Counted {
  const f = fieldsOf(res);
  t.equal(res.headers.get('ratelimit-policy'), `"${name}";q=${q};w=60`, `${what}: RateLimit-Policy`);
  t.same(f && { name: f.name, q: f.q, w: f.w, r: f.r }, { name, q, w: 60, r }, `${what}: ${name} r=${r} (${res.headers.get('ratelimit')})`);
  t.ok(f !== null && f.t >= 1 && f.t <= 60, `${what}: t in 1..60 (${f?.t})`);
  return f as Counted;
}

/** A 429 of the limit: r=0, and t = Retry-After = retryAfter of the body. */
function expectOver(t: Asserts, res: Answer, name: string, q: number, what: string): void {
  t.equal(res.status, 429, `${what}: 429 (${res.text})`);
  const f = expectFields(t, res, name, q, 0, what);
  t.equal(String(f?.t), res.headers.get('retry-after'), `${what}: t = Retry-After`);
  t.equal(f?.t, res.body?.retryAfter, `${what}: t = retryAfter of the body`);
}

function expectNone(t: Asserts, res: Answer, what: string): void {
  t.equal(fieldsOf(res), null, `${what} (${res.status}): no RateLimit fields`);
}

/** A run of requests: r from limit-1 down to 0, t never rising within the window. */
async function expectCountdown(t: Asserts, q: number, send: (i: number) => Promise<Answer>, name: string, status = 200): Promise<void> {
  let lastT = 60;
  for (let i = 0; i < q; i++) {
    const res = await send(i);
    t.equal(res.status, status, `request ${i + 1}: ${status} (${res.text.slice(0, 200)})`);
    const f = expectFields(t, res, name, q, q - 1 - i, `request ${i + 1}`);
    t.ok(f !== null && f.t <= lastT, `request ${i + 1}: t does not rise (${f?.t} <= ${lastT})`);
    lastT = f?.t ?? lastT;
  }
}

const h = await startHarness(t, 'rlf-limits', {
  ...NO_RATE_LIMITS,
  RATE_VALIDATE_PER_MIN: '5',
  RATE_SIGN_TOKEN_PER_MIN: '5', // minting 6 tokens of a license for validate: get-token and 5 sign-tokens
  RATE_GET_TOKEN_PER_MIN: '4',
  RATE_CHECK_QUOTA_PER_MIN: '3',
  RATE_HISTORY_PER_MIN: '4',
});

t.test('validate: "validate" per company', async (t) => {

  t.test('r counts down from 4; the 6th is a 429 with r=0 and t = Retry-After', async (t) => {
    const lic = await h.createLicense({ totalQuota: 20 });
    const tokens = (await mintTokens(h, lic, 6)).tokens;
    await expectCountdown(t, 5, (i) => h.validate(tokens[i]), 'validate');
    expectOver(t, await h.validate(tokens[5]), 'validate', 5, 'the 6th');
  });

  t.test('a used token (counted) carries them; expired, malformed and empty tokens (before Redis) do not', async (t) => {
    const lic = await h.createLicense({ totalQuota: 20 });
    const [token] = (await mintTokens(h, lic, 1)).tokens as [string];
    const now = Math.floor(Date.now() / 1000);
    const expired = craftJwt(HS256_HEADER, { ...decodeJwt(token).payload, iat: now - 400, exp: now - 100 }, h.config.jwtKeys[0]!.secret);
    const late = await h.validate(expired);
    t.same([late.status, late.body?.message], [401, MSG.EXPIRED]);
    expectNone(t, late, 'expired token');
    const malformed = await h.validate('not.a.token');
    t.same([malformed.status, malformed.body?.message], [401, MSG.INVALID]);
    expectNone(t, malformed, 'malformed token');
    expectNone(t, await h.validate(''), 'empty token');
    expectNone(t, await h.request('POST', '/api/license/validate', { token }, { 'idempotency-key': 'a\tb' }), 'malformed Idempotency-Key');

    expectFields(t, await h.validate(token), 'validate', 5, 4, 'the first counted request (nothing before it was counted)');
    const used = await h.validate(token);
    t.same([used.status, used.body?.message], [400, MSG.USED], 'the same token again: used');
    expectFields(t, used, 'validate', 5, 3, 'the used token');
  });
});

t.test('sign-token: "sign-token" per company', async (t) => {

  t.test('r counts down from 4; the 6th is a 429 with r=0 and t = Retry-After', async (t) => {
    const lic = await h.createLicense({ totalQuota: 20 });
    const { accessToken } = await getTokenPair(h, lic);
    await expectCountdown(t, 5, (i) => h.signToken(accessToken, i % 2), 'sign-token');
    expectOver(t, await h.signToken(accessToken), 'sign-token', 5, 'the 6th');
  });

  t.test('a license without quota (counted) carries them; a bad bearer or body does not', async (t) => {
    const lic = await h.createLicense({ totalQuota: 1 });
    const { accessToken, signToken } = await getTokenPair(h, lic);
    t.equal((await h.validate(signToken)).status, 200, 'the one unit used');
    expectNone(t, await h.signToken('not-a-token'), 'a bad access token');
    expectNone(t, await h.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 7 }, { authorization: `Bearer ${accessToken}` }),
      'imzaTipi 7');
    const none = await h.signToken(accessToken);
    expectCodedError(t, none, 400, 'INSUFFICIENT_QUOTA', 'no quota left');
    expectFields(t, none, 'sign-token', 5, 4, 'no quota left');
  });
});

t.test('get-token: "get-token" per license key, counting the tokens issued', async (t) => {

  t.test('r counts down from 3; the 5th is a 429 with r=0 and t = Retry-After', async (t) => {
    const lic = await h.createLicense({ totalQuota: 20 });
    await expectCountdown(t, 4, () => h.getToken(lic.licenseKey, lic.password), 'get-token');
    expectOver(t, await h.getToken(lic.licenseKey, lic.password), 'get-token', 4, 'the 5th');
  });

  t.test('a 400 quota (its credentials checked out: counted) carries them; a wrong password and an unknown key count nothing of it', async (t) => {
    const lic = await h.createLicense({ totalQuota: 1 });
    const wrong = await h.getToken(lic.licenseKey, 'wrong password 123');
    expectCodedError(t, wrong, 401, 'INVALID_CREDENTIALS', 'wrong password');
    expectNone(t, wrong, 'wrong password, failure budgets off');
    const unknown = await h.getToken(randomUUID(), 'any password 123');
    expectCodedError(t, unknown, 401, 'INVALID_CREDENTIALS', 'unknown key');
    expectNone(t, unknown, 'unknown key, failure budgets off');
    const { signToken } = await getTokenPair(h, lic);
    t.equal((await h.validate(signToken)).status, 200, 'the one unit used');
    const none = await h.getToken(lic.licenseKey, lic.password);
    expectCodedError(t, none, 400, 'INSUFFICIENT_QUOTA', 'no quota left');
    expectFields(t, none, 'get-token', 4, 2, 'no quota left (the key\'s second login that checked out)');
  });

  t.test('a key that is no UUID, or a body error, is not counted and carries none', async (t) => {
    const lic = await h.createLicense();
    const odd = await h.getToken('not-a-uuid', lic.password);
    expectCodedError(t, odd, 401, 'INVALID_CREDENTIALS', 'key not a UUID');
    expectNone(t, odd, 'key not a UUID');
    const bad = await h.request('POST', '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, imzaTipi: 0 });
    expectCodedError(t, bad, 400, 'INVALID_REQUEST', 'no password');
    expectNone(t, bad, 'no password');
    expectFields(t, await h.getToken(lic.licenseKey, lic.password), 'get-token', 4, 3, 'the first counted request');
  });
});

t.test('failed logins: "failed-logins" per address, "failed-logins-key" per key', async (t) => {
  const failed = await startHarness(t, 'rlf-failed', {
    ...NO_RATE_LIMITS, TRUST_PROXY: '1', GET_TOKEN_MAX_DELAY_MS: '0',
    RATE_GET_TOKEN_FAILURES_PER_MIN: '2', RATE_GET_TOKEN_KEY_FAILURES_PER_MIN: '3',
  });
  const from = (address: string, licenseKey: string, password: string) =>
    failed.request('POST', '/api/v1/auth/get-token', { licenseKey, password, imzaTipi: 0 }, { 'x-forwarded-for': address });

  t.test('an address\'s failures count down its budget; past it a 429 with r=0, the right password included', async (t) => {
    const lic = await failed.createLicense();
    for (let i = 0; i < 2; i++) {
      const res = await from('203.0.113.1', randomUUID(), `wrong password ${i}`);
      expectCodedError(t, res, 401, 'INVALID_CREDENTIALS', `failure ${i + 1}`);
      expectFields(t, res, 'failed-logins', 2, 1 - i, `failure ${i + 1}: the address's budget`);
    }
    expectOver(t, await from('203.0.113.1', lic.licenseKey, 'wrong password 2'), 'failed-logins', 2, 'the 3rd failure');
    expectOver(t, await from('203.0.113.1', lic.licenseKey, lic.password), 'failed-logins', 2, 'even the right password');
  });

  t.test('a wrong password and an unknown key carry the same fields (no telling which keys exist)', async (t) => {
    const lic = await failed.createLicense();
    const wrong = await from('203.0.113.2', lic.licenseKey, 'wrong password');
    const unknown = await from('203.0.113.3', randomUUID(), 'wrong password');
    t.equal(wrong.headers.get('ratelimit-policy'), unknown.headers.get('ratelimit-policy'), 'the same policy');
    t.equal(wrong.headers.get('ratelimit'), unknown.headers.get('ratelimit'), 'the same figures');
  });

  t.test('a key\'s failures from several addresses: past its budget a 429 "failed-logins-key"', async (t) => {
    const lic = await failed.createLicense();
    for (let i = 0; i < 3; i++) expectCodedError(t, await from(`198.51.100.${i + 1}`, lic.licenseKey, 'guess'), 401, 'INVALID_CREDENTIALS');
    expectOver(t, await from('198.51.100.9', lic.licenseKey, 'guess'), 'failed-logins-key', 3, 'the 4th, from a fresh address');
  });

  t.test('an address trusted at a key: its failures there count down its own budget at the key', async (t) => {
    const lic = await failed.createLicense();
    t.equal((await from('192.0.2.5', lic.licenseKey, lic.password)).status, 200, 'a login (the address is trusted at the key)');
    for (let i = 0; i < 3; i++) {
      const res = await from('192.0.2.5', lic.licenseKey, `mistyped ${i}`);
      expectFields(t, res, 'failed-logins-key', 3, 2 - i, `trusted failure ${i + 1}`);
    }
    expectOver(t, await from('192.0.2.5', lic.licenseKey, 'mistyped 3'), 'failed-logins-key', 3, 'the 4th');
  });
});

t.test('check-quota: "check-quota" per license key and client address', async (t) => {

  t.test('r counts down from 2; the 4th is a 429 with r=0 and t = Retry-After', async (t) => {
    const lic = await h.createLicense();
    await expectCountdown(t, 3, () => h.checkQuota(lic.licenseKey), 'check-quota');
    expectOver(t, await h.checkQuota(lic.licenseKey), 'check-quota', 3, 'the 4th');
  });

  t.test('neither a UUID no license has nor a key that is no UUID is counted: no fields', async (t) => {
    const unknown = await h.checkQuota(randomUUID());
    t.equal(unknown.status, 404, 'unknown key: 404');
    expectNone(t, unknown, 'unknown key');
    const odd = await h.checkQuota('not-a-uuid');
    t.same([odd.status, odd.body?.error?.code], [400, 'INVALID_LICENSE_KEY'], 'key not a UUID: 400');
    expectNone(t, odd, 'key not a UUID');
  });
});

t.test('history: "history" per license', async (t) => {

  t.test('r counts down from 3; the 5th is a 429 with r=0 and t = Retry-After', async (t) => {
    const lic = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    await expectCountdown(t, 4, (i) => h.history(lic.licenseKey, accessToken, `?limit=${i + 1}`), 'history');
    expectOver(t, await h.history(lic.licenseKey, accessToken), 'history', 4, 'the 5th');
  });

  t.test('a revoked access token (counted) carries them; a bad bearer, a bad query or another license\'s token does not', async (t) => {
    const lic = await h.createLicense();
    const other = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    const { accessToken: otherAccess } = await getTokenPair(h, other);
    expectNone(t, await h.history(lic.licenseKey, 'not-a-token'), 'a bad access token');
    expectNone(t, await h.history(lic.licenseKey, accessToken, '?limit=501'), 'limit 501');
    expectNone(t, await h.history('not-a-uuid', accessToken), 'key not a UUID');
    const foreign = await h.history(lic.licenseKey, otherAccess);
    expectCodedError(t, foreign, 403, 'FORBIDDEN', 'another license\'s token');
    expectNone(t, foreign, 'another license\'s token');
    expectFields(t, await h.history(lic.licenseKey, accessToken), 'history', 4, 3, 'the first counted request');
    await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { password: 'changed password 1' });
    const revoked = await h.history(lic.licenseKey, accessToken);
    expectCodedError(t, revoked, 401, 'INVALID_TOKEN', 'revoked by a password change');
    expectFields(t, revoked, 'history', 4, 2, 'the revoked token');
  });
});

t.test('every limit 0: neither field on any answer', async (t) => {
  const off = await startHarness(t, 'rlf-off', NO_RATE_LIMITS);
  const lic = await off.createLicense({ totalQuota: 5 });
  const got = await off.getToken(lic.licenseKey, lic.password);
  t.equal(got.status, 200);
  const signed = await off.signToken(got.body.accessToken);
  t.equal(signed.status, 200);
  const answers: [string, Answer][] = [
    ['get-token 200', got],
    ['get-token 401', await off.getToken(lic.licenseKey, 'wrong password 1')],
    ['sign-token 200', signed],
    ['validate 200', await off.validate(signed.body.signToken)],
    ['validate 400 used', await off.validate(signed.body.signToken)],
    ['check-quota 200', await off.checkQuota(lic.licenseKey)],
    ['check-quota 404', await off.checkQuota(randomUUID())],
    ['history 200', await off.history(lic.licenseKey, got.body.accessToken)],
  ];
  t.same(answers.map(([, a]) => a.status), [200, 401, 200, 200, 400, 200, 404, 200], 'the answers expected');
  for (const [what, res] of answers) expectNone(t, res, what);
});
