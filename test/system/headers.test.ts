import { randomUUID } from 'node:crypto';
import t from 'tap';
import { LIVE_COUNTS, NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { bearer } from '../helpers/jwt.js';
import type { Asserts } from '../helpers/shapes.js';
import { getTokenPair } from '../helpers/tokens.js';

// Headers every answer carries, whoever makes it (a route, the router's 404/405, the body
// limit's 413, a preflight, the hasher's 503): no "uWebSockets" banner naming the server,
// "X-Content-Type-Options: nosniff"; and "Cache-Control: no-store" on every answer of the
// routes that hand out tokens or private data (get-token, sign-token, history), which
// check-quota, a public and cacheable count, does not carry.

const ORIGIN = 'https://app.example.com';
const GET_TOKEN = '/api/v1/auth/get-token';
const SIGN_TOKEN = '/api/v1/auth/sign-token';
const VALIDATE = '/api/license/validate';
const LIMIT = 4;

/** How an answer must treat caching: no-store, never no-store, or not specified. */
type Caching = 'no-store' | 'not no-store' | 'any';

interface Seen {
  what: string;
  res: Answer;
  status: number;
  caching: Caching;
}

function expectHeaders(t: Asserts, seen: Seen): void {
  const { what, res } = seen;
  t.equal(res.status, seen.status, `${what}: status ${seen.status} (${res.text})`);
  const names = [...res.headers.keys()];
  t.same(names.filter((n) => /uwebsockets/i.test(n)), [], `${what}: no uWebSockets header (${names.join(', ')})`);
  const values = [...res.headers.values()];
  t.same(values.filter((v) => /uwebsockets/i.test(v)), [], `${what}: no header value names uWebSockets`);
  t.equal(res.headers.get('x-content-type-options'), 'nosniff', `${what}: X-Content-Type-Options: nosniff`);
  const cache = res.headers.get('cache-control');
  if (seen.caching === 'no-store') t.equal(cache, 'no-store', `${what}: Cache-Control: no-store`);
  if (seen.caching === 'not no-store') t.notMatch(cache ?? '', /no-store/i, `${what}: no Cache-Control: no-store (${cache})`);
}

/** A JSON body of `size` bytes. */
const oversize = (size: number): string => JSON.stringify({ token: 'x'.repeat(size) });

t.test('headers on every kind of answer', async (t) => {
  const h = await startHarness(t, 'headers', {
    ...LIVE_COUNTS,
    CORS_ORIGINS: ORIGIN,
    BODY_LIMIT_BYTES: '1024',
    RATE_GET_TOKEN_PER_MIN: String(LIMIT),
    RATE_SIGN_TOKEN_PER_MIN: String(LIMIT),
    RATE_CHECK_QUOTA_PER_MIN: String(LIMIT),
    RATE_HISTORY_PER_MIN: String(LIMIT),
  });
  const lic = await h.createLicense({ totalQuota: 50 });
  const other = await h.createLicense();
  const limited = await h.createLicense({ totalQuota: 50 }); // the one whose rate limits are spent
  const seen: Seen[] = [];
  const see = async (what: string, status: number, caching: Caching, send: () => Promise<Answer>): Promise<Answer> => {
    const res = await send();
    seen.push({ what, res, status, caching });
    return res;
  };
  const withOrigin = { origin: ORIGIN };
  const history = `/api/License/history/${lic.licenseKey}`;
  const checkQuota = `/api/License/check-quota/${lic.licenseKey}`;

  // get-token (2 of this license's LIMIT attempts)
  const got = await see('get-token 200', 200, 'no-store', () => h.getToken(lic.licenseKey, lic.password));
  const access = got.body.accessToken as string;
  await see('get-token 200 from an allowed origin', 200, 'no-store', () =>
    h.request('POST', GET_TOKEN, { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 }, withOrigin));
  await see('get-token 401 wrong password', 401, 'no-store', () => h.getToken(lic.licenseKey, 'not the password 1'));
  await see('get-token 400 bad body', 400, 'no-store', () => h.request('POST', GET_TOKEN, { licenseKey: lic.licenseKey }));
  await see('get-token 413', 413, 'no-store', () => h.request('POST', GET_TOKEN, oversize(2048)));

  // sign-token (2 of LIMIT)
  const signed = await see('sign-token 200', 200, 'no-store', () => h.signToken(access));
  await see('sign-token 200 from an allowed origin', 200, 'no-store', () =>
    h.request('POST', SIGN_TOKEN, { imzaTipi: 1 }, { ...bearer(access), ...withOrigin }));
  await see('sign-token 401 no token', 401, 'no-store', () => h.request('POST', SIGN_TOKEN, { imzaTipi: 0 }));
  await see('sign-token 400 bad body', 400, 'no-store', () => h.request('POST', SIGN_TOKEN, { imzaTipi: 7 }, bearer(access)));
  await see('sign-token 413', 413, 'no-store', () => h.request('POST', SIGN_TOKEN, oversize(2048), bearer(access)));

  // validate
  await see('validate 200', 200, 'any', () => h.validate(signed.body.signToken));
  await see('validate 400 used', 400, 'any', () => h.validate(signed.body.signToken));
  await see('validate 401', 401, 'any', () => h.validate('not.a.token'));
  await see('validate 413', 413, 'any', () => h.request('POST', VALIDATE, oversize(2048)));

  // check-quota (2 of LIMIT)
  await see('check-quota 200', 200, 'not no-store', () => h.checkQuota(lic.licenseKey));
  await see('check-quota 200 from an allowed origin', 200, 'not no-store', () => h.request('GET', checkQuota, undefined, withOrigin));
  await see('check-quota 404', 404, 'not no-store', () => h.checkQuota(randomUUID()));

  // history (2 of LIMIT: the refusals below are not counted)
  await see('history 200', 200, 'no-store', () => h.history(lic.licenseKey, access));
  await see('history 200 from an allowed origin', 200, 'no-store', () => h.request('GET', history, undefined, { ...bearer(access), ...withOrigin }));
  await see('history 401 no token', 401, 'no-store', () => h.request('GET', history));
  await see('history 403 another license', 403, 'no-store', () => h.history(other.licenseKey, access));
  await see('history 400 bad limit', 400, 'no-store', () => h.history(lic.licenseKey, access, '?limit=0'));

  // rate limits spent on one license
  const limitedAccess = (await getTokenPair(h, limited)).accessToken;
  for (let i = 1; i < LIMIT; i++) await h.getToken(limited.licenseKey, limited.password);
  await see('get-token 429', 429, 'no-store', () => h.getToken(limited.licenseKey, limited.password));
  for (let i = 0; i < LIMIT; i++) await h.signToken(limitedAccess);
  await see('sign-token 429', 429, 'no-store', () => h.signToken(limitedAccess));
  for (let i = 0; i < LIMIT; i++) await h.checkQuota(limited.licenseKey);
  await see('check-quota 429', 429, 'not no-store', () => h.checkQuota(limited.licenseKey));
  for (let i = 0; i < LIMIT; i++) await h.history(limited.licenseKey, limitedAccess);
  await see('history 429', 429, 'no-store', () => h.history(limited.licenseKey, limitedAccess));

  // preflights and OPTIONS
  const publicPaths: [string, string][] = [
    ['get-token', GET_TOKEN], ['sign-token', SIGN_TOKEN], ['validate', VALIDATE], ['check-quota', checkQuota], ['history', history],
  ];
  for (const [name, path] of publicPaths) {
    const caching = name === 'check-quota' ? 'not no-store' : 'any';
    await see(`OPTIONS ${name}, allowed origin`, 204, caching, () => h.request('OPTIONS', path, undefined, withOrigin));
    await see(`OPTIONS ${name}, no origin`, 204, caching, () => h.request('OPTIONS', path));
    await see(`OPTIONS ${name}, another origin`, 403, caching, () => h.request('OPTIONS', path, undefined, { origin: 'https://evil.example' }));
  }
  await see('OPTIONS admin 405', 405, 'any', () => h.request('OPTIONS', `/admin/v1/licenses/${lic.licenseKey}`, undefined, withOrigin));
  await see('OPTIONS /healthz 405', 405, 'any', () => h.request('OPTIONS', '/healthz', undefined, withOrigin));

  // admin, health, the router's own answers
  await see('admin GET 200', 200, 'any', () => h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`));
  await see('admin GET 401', 401, 'any', () => h.request('GET', `/admin/v1/licenses/${lic.licenseKey}`));
  await see('admin GET 404', 404, 'any', () => h.admin('GET', `/admin/v1/licenses/${randomUUID()}`));
  await see('admin PATCH 400', 400, 'any', () => h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, {}));
  await see('/healthz 200', 200, 'any', () => h.request('GET', '/healthz'));
  await see('404 unknown path', 404, 'any', () => h.request('GET', '/no/such/path'));
  await see('404 unknown path under /api', 404, 'any', () => h.request('POST', '/api/v1/auth/no-such'));
  await see('405 GET get-token', 405, 'any', () => h.request('GET', GET_TOKEN));
  await see('405 DELETE check-quota', 405, 'any', () => h.request('DELETE', checkQuota));
  await see('405 POST /healthz', 405, 'any', () => h.request('POST', '/healthz', {}));

  for (const s of seen) expectHeaders(t, s);
  t.ok(seen.length >= 50, `${seen.length} answers checked`);
  await h.drainWorker();
});

t.test('headers on a 503 of get-token (password queue full)', async (t) => {
  const h = await startHarness(t, 'headers503', {
    ...NO_RATE_LIMITS, RATE_GET_TOKEN_FAILURES_PER_MIN: '0', PASSWORD_QUEUE_MAX: '1', CORS_ORIGINS: ORIGIN,
  });
  const lic = await h.createLicense();
  const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => h.getToken(lic.licenseKey, `wrong password ${i}`)));
  const unavailable = answers.filter((a) => a.status === 503);
  t.ok(unavailable.length >= 1, `a full password queue answers 503 (${answers.map((a) => a.status).join(',')})`);
  for (const res of answers) {
    const status = res.status === 503 ? 503 : 401;
    expectHeaders(t, { what: `get-token ${res.status}`, res, status, caching: 'no-store' });
  }
});
