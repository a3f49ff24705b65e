import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/config/vars.js';
import { FUZZ_SEED } from '../helpers/fuzzRequests.js';
import { ADMIN_TOKEN, NO_RATE_LIMITS, startHarness, testEnv, type Harness, type TestLicense } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { bearer } from '../helpers/jwt.js';
import { expectCheckQuotaError, expectCodedError, expectMessageError, type Asserts } from '../helpers/shapes.js';
import { getTokenPair } from '../helpers/tokens.js';

// CORS (CORS_ORIGINS) as a browser's requests reach the service, sent by hand with Node's
// fetch: preflights (OPTIONS with Origin) on every public path, the CORS headers of real
// answers, the admin API and /healthz never open to browsers, the origin matching rules
// (wildcards, ports, IDN, "*"), bad CORS_ORIGINS refused at start, and a fixed-seed
// property over arbitrary Origin values. The browser's own view: cors.browser.test.ts.

const RULES = 'https://*.ornek.com.tr, http://127.0.0.1:5173, https://*.örnek.com.tr';
const ALLOWED = 'https://imza.ornek.com.tr';
const REFUSED = 'https://evil.example';
const ALLOW_HEADERS = 'Content-Type, Authorization, Idempotency-Key';
const EXPOSE = 'Retry-After, RateLimit, RateLimit-Policy';
const ACAO = 'access-control-allow-origin';

type Shape = 'coded' | 'message' | 'timestamped';
interface PublicPath { name: string; path: string; methods: string; shape: Shape }
const SOME_KEY = randomUUID();
const PUBLIC: PublicPath[] = [
  { name: 'get-token', path: '/api/v1/auth/get-token', methods: 'POST', shape: 'coded' },
  { name: 'sign-token', path: '/api/v1/auth/sign-token', methods: 'POST', shape: 'coded' },
  { name: 'validate', path: '/api/license/validate', methods: 'POST', shape: 'message' },
  { name: 'check-quota', path: `/api/License/check-quota/${SOME_KEY}`, methods: 'GET', shape: 'timestamped' },
  { name: 'history', path: `/api/License/history/${SOME_KEY}`, methods: 'GET', shape: 'coded' },
];

const h = await startHarness(t, 'cors', { ...NO_RATE_LIMITS, CORS_ORIGINS: RULES });
const hOff = await startHarness(t, 'cors-off', NO_RATE_LIMITS);
const hAny = await startHarness(t, 'cors-any', { ...NO_RATE_LIMITS, CORS_ORIGINS: '*' });

/** A preflight as browsers send it; origin undefined: a plain OPTIONS. */
function preflight(on: Harness, p: PublicPath, origin?: string): Promise<Answer> {
  const headers: Record<string, string> = origin === undefined ? {} : {
    origin, 'access-control-request-method': p.methods, 'access-control-request-headers': 'content-type,authorization',
  };
  return on.request('OPTIONS', p.path, undefined, headers);
}

const corsNames = (res: Answer): string[] => [...res.headers.keys()].filter((n) => n.startsWith('access-control-')).sort();

function expectPreflightAllowed(t: Asserts, res: Answer, p: PublicPath, origin: string): void {
  const w = `${p.name} preflight from ${origin}`;
  t.equal(res.status, 204, `${w}: 204 (${res.text})`);
  t.equal(res.text, '', `${w}: no body`);
  t.equal(res.headers.get(ACAO), origin, `${w}: Allow-Origin is the origin`);
  t.equal(res.headers.get('access-control-allow-methods'), p.methods, `${w}: Allow-Methods ${p.methods}`);
  t.equal(res.headers.get('access-control-allow-headers'), ALLOW_HEADERS, `${w}: Allow-Headers`);
  t.equal(res.headers.get('access-control-max-age'), '7200', `${w}: Max-Age 7200`);
  t.equal(res.headers.get('vary'), 'Origin', `${w}: Vary: Origin`);
  t.strictSame(corsNames(res), [ACAO, 'access-control-allow-headers', 'access-control-allow-methods', 'access-control-max-age'].sort(),
    `${w}: these four Access-Control-* headers and no other`);
}

/** 403 in the endpoint's published error shape, and no CORS header at all. */
function expectPreflightRefused(t: Asserts, res: Answer, p: PublicPath, what: string): void {
  const w = `${p.name} preflight ${what}`;
  if (p.shape === 'coded') expectCodedError(t, res, 403, 'ORIGIN_NOT_ALLOWED', w);
  else if (p.shape === 'message') expectMessageError(t, res, [403], w);
  else expectCheckQuotaError(t, res, 403, 'ORIGIN_NOT_ALLOWED', w);
  t.strictSame(corsNames(res), [], `${w}: no Access-Control-* header (${corsNames(res).join(', ')})`);
}

t.test('preflight from an allowed origin: 204 with the CORS headers, on every public path', async (t) => {
  for (const p of PUBLIC) expectPreflightAllowed(t, await preflight(h, p, ALLOWED), p, ALLOWED);
  const upper = await h.request('OPTIONS', `/api/license/CHECK-QUOTA/${SOME_KEY}`, undefined, { origin: ALLOWED });
  t.equal(upper.headers.get(ACAO), ALLOWED, 'the path casing does not matter');
});

t.test('preflight from an origin not allowed: 403 in the endpoint shape, no Allow-Origin', async (t) => {
  for (const p of PUBLIC) {
    const res = await preflight(h, p, REFUSED);
    expectPreflightRefused(t, res, p, `from ${REFUSED}`);
    t.equal(res.headers.get('vary'), 'Origin', `${p.name}: Vary: Origin on the refusal too`);
  }
});

t.test('CORS_ORIGINS unset: every preflight is refused, and no answer carries a CORS header or Vary', async (t) => {
  for (const p of PUBLIC) {
    const res = await preflight(hOff, p, ALLOWED);
    expectPreflightRefused(t, res, p, 'without CORS_ORIGINS');
    t.equal(res.headers.get('vary'), null, `${p.name} refusal: no Vary`);
    const plain = await preflight(hOff, p);
    t.equal(plain.status, 204, `${p.name}: OPTIONS without Origin still 204`);
    t.equal(plain.headers.get('vary'), null, `${p.name} OPTIONS without Origin: no Vary`);
  }
  const lic = await hOff.createLicense();
  for (const [what, res] of await realAnswers(hOff, lic, { origin: ALLOWED })) {
    t.strictSame(corsNames(res), [], `${what}: no Access-Control-* header`);
    t.equal(res.headers.get('vary'), null, `${what}: no Vary`);
  }
});

t.test('OPTIONS without Origin on a public path: 204 with Allow', async (t) => {
  for (const on of [h, hOff]) {
    for (const p of PUBLIC) {
      const res = await preflight(on, p);
      t.equal(res.status, 204, `${p.name}: 204`);
      t.equal(res.text, '', `${p.name}: no body`);
      t.equal(res.headers.get('allow'), `${p.methods}, OPTIONS`, `${p.name}: Allow: ${p.methods}, OPTIONS`);
      t.equal(res.headers.get(ACAO), null, `${p.name}: no Allow-Origin without an Origin`);
    }
  }
});

t.test('OPTIONS on the admin API, /healthz and /readyz: 405 with Allow, no CORS header, whatever the Origin', async (t) => {
  const lic = await h.createLicense();
  const paths: [string, RegExp][] = [['/admin/v1/licenses', /\bPOST\b/], [`/admin/v1/licenses/${lic.licenseKey}`, /\bGET\b/], ['/healthz', /\bGET\b/], ['/readyz', /\bGET\b/]];
  for (const [path, allow] of paths) {
    const variants: Record<string, string>[] = [{}, { origin: ALLOWED, 'access-control-request-method': 'POST' }, { origin: REFUSED }];
    for (const headers of variants) {
      const what = `OPTIONS ${path} (Origin ${headers.origin ?? 'none'})`;
      const res = await h.request('OPTIONS', path, undefined, headers);
      t.equal(res.status, 405, `${what}: 405 (${res.text})`);
      t.match(res.headers.get('allow') ?? '', allow, `${what}: Allow names the methods`);
      t.notMatch(res.headers.get('allow') ?? '', /OPTIONS/, `${what}: Allow does not offer OPTIONS`);
      t.strictSame(corsNames(res), [], `${what}: no Access-Control-* header`);
    }
  }
});

/** One answer of each kind on every public path (200s and refusals), every request with `headers`. */
async function realAnswers(on: Harness, lic: TestLicense, headers: Record<string, string>): Promise<[string, Answer, number][]> {
  const out: [string, Answer, number][] = [];
  const add = (what: string, res: Answer, status: number): void => void out.push([`${what} ${res.status}`, res, status]);
  const get = await on.request('POST', '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 }, headers);
  add('get-token', get, 200);
  add('get-token wrong password', await on.request('POST', '/api/v1/auth/get-token',
    { licenseKey: lic.licenseKey, password: 'wrong password', imzaTipi: 0 }, headers), 401);
  add('get-token bad body', await on.request('POST', '/api/v1/auth/get-token', { imzaTipi: 7 }, headers), 400);
  const access = String(get.body?.accessToken);
  add('sign-token', await on.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, { ...headers, ...bearer(access) }), 200);
  add('sign-token without a token', await on.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, headers), 401);
  add('validate', await on.request('POST', '/api/license/validate', { token: get.body?.signToken }, headers), 200);
  add('validate empty token', await on.request('POST', '/api/license/validate', { token: '' }, headers), 400);
  add('check-quota', await on.request('GET', `/api/License/check-quota/${lic.licenseKey}`, undefined, headers), 200);
  add('check-quota bad key', await on.request('GET', '/api/License/check-quota/not-a-uuid', undefined, headers), 400);
  add('history', await on.request('GET', `/api/License/history/${lic.licenseKey}`, undefined, { ...headers, ...bearer(access) }), 200);
  add('history without a token', await on.request('GET', `/api/License/history/${lic.licenseKey}`, undefined, headers), 401);
  // a method the path does not serve: a page reads the 405 like any other error
  add('get-token by GET', await on.request('GET', '/api/v1/auth/get-token', undefined, headers), 405);
  add('check-quota by a form POST', await on.request('POST', `/api/License/check-quota/${lic.licenseKey}`, 'x=1',
    { ...headers, 'content-type': 'application/x-www-form-urlencoded' }), 405);
  return out;
}

t.test('real answers to an allowed origin carry Allow-Origin, Expose-Headers and Vary, errors included', async (t) => {
  const lic = await h.createLicense();
  for (const [what, res, status] of await realAnswers(h, lic, { origin: ALLOWED })) {
    t.equal(res.status, status, `${what}: status ${status} (${res.text})`);
    t.equal(res.headers.get(ACAO), ALLOWED, `${what}: Allow-Origin is the origin`);
    t.equal(res.headers.get('access-control-expose-headers'), EXPOSE, `${what}: Expose-Headers`);
    t.equal(res.headers.get('vary'), 'Origin', `${what}: Vary: Origin`);
    t.equal(res.headers.get('access-control-allow-credentials'), null, `${what}: no Allow-Credentials`);
  }
});

t.test('real answers to an origin not allowed, or without Origin: no CORS header, still Vary', async (t) => {
  const lic = await h.createLicense();
  const variants: Record<string, string>[] = [{ origin: REFUSED }, { origin: 'null' }, {}];
  for (const headers of variants) {
    for (const [what, res, status] of await realAnswers(h, lic, headers)) {
      const w = `${what} (Origin ${headers.origin ?? 'none'})`;
      t.equal(res.status, status, `${w}: status ${status} (${res.text})`);
      t.strictSame(corsNames(res), [], `${w}: neither Allow-Origin nor Expose-Headers`);
      t.equal(res.headers.get('vary'), 'Origin', `${w}: Vary: Origin`);
    }
  }
});

t.test('admin answers never carry Allow-Origin, even for an allowed origin', async (t) => {
  const origin = { origin: ALLOWED };
  const auth = { authorization: `Bearer ${ADMIN_TOKEN}`, ...origin };
  const created = await h.request('POST', '/admin/v1/licenses',
    { organizationName: 'CORS A.Ş.', password: 'a good password', totalQuota: 3, expiryDate: new Date(Date.now() + 86400_000).toISOString() }, auth);
  const key = String(created.body?.data?.licenseKey);
  const answers: [string, Answer, number][] = [
    ['POST /admin/v1/licenses', created, 201],
    ['GET /admin/v1/licenses/{key}', await h.request('GET', `/admin/v1/licenses/${key}`, undefined, auth), 200],
    ['GET /admin/v1/licenses/{key} without the admin token', await h.request('GET', `/admin/v1/licenses/${key}`, undefined, origin), 401],
    ['POST /admin/v1/licenses/{key}/quota', await h.request('POST', `/admin/v1/licenses/${key}/quota`, { add: 1 }, auth), 200],
    ['GET /healthz', await h.request('GET', '/healthz', undefined, origin), 200],
  ];
  for (const [what, res, status] of answers) {
    t.equal(res.status, status, `${what}: ${status} (${res.text.slice(0, 200)})`);
    t.strictSame(corsNames(res), [], `${what}: no Access-Control-* header`);
  }
});

/** A preflight and a real request (check-quota) from `origin`: allowed or refused, both agreeing. */
async function expectOrigin(t: Asserts, on: Harness, lic: TestLicense, origin: string, allowed: boolean): Promise<void> {
  const pre = await preflight(on, PUBLIC[0] as PublicPath, origin);
  const real = await on.request('GET', `/api/License/check-quota/${lic.licenseKey}`, undefined, { origin });
  t.equal(real.status, 200, `${JSON.stringify(origin)}: check-quota answers 200`);
  if (allowed) {
    expectPreflightAllowed(t, pre, PUBLIC[0] as PublicPath, origin);
    t.equal(real.headers.get(ACAO), origin, `${JSON.stringify(origin)} allowed: the answer echoes it`);
    t.equal(real.headers.get('access-control-expose-headers'), EXPOSE, `${JSON.stringify(origin)} allowed: Expose-Headers`);
  } else {
    // an empty Origin is no Origin: a plain OPTIONS (204 + Allow), still without Allow-Origin
    if (origin !== '') t.equal(pre.status, 403, `${JSON.stringify(origin)} refused: preflight 403`);
    t.equal(pre.headers.get(ACAO), null, `${JSON.stringify(origin)} refused: no Allow-Origin on the preflight`);
    t.strictSame(corsNames(real), [], `${JSON.stringify(origin)} refused: no CORS header on the answer`);
  }
}

t.test('origin matching: wildcards at any depth but not the apex, scheme and port exact, IDN in punycode', async (t) => {
  const lic = await h.createLicense();
  const allowed = [
    'https://imza.ornek.com.tr', 'https://a.b.ornek.com.tr', 'https://IMZA.Ornek.COM.tr', 'https://imza.ornek.com.tr:443',
    'http://127.0.0.1:5173', 'https://imza.xn--rnek-4qa.com.tr',
  ];
  const refused = [
    'https://ornek.com.tr', 'http://imza.ornek.com.tr', 'https://imza.ornek.com.tr:8443', 'https://evilornek.com.tr',
    'https://imza.ornek.com.tr.evil.com', 'null', '', 'http://127.0.0.1:5174', 'http://127.0.0.1', 'https://127.0.0.1:5173',
    'http://localhost:5173', 'https://xn--rnek-4qa.com.tr', 'https://imza.ornek.com.tr:80',
  ];
  for (const origin of allowed) await expectOrigin(t, h, lic, origin, true);
  for (const origin of refused) await expectOrigin(t, h, lic, origin, false);
});

t.test('CORS_ORIGINS=*: every origin is allowed and echoed (never "*"), but not the opaque null', async (t) => {
  const lic = await hAny.createLicense();
  for (const origin of ['https://any.example', 'http://localhost:3000', 'http://127.0.0.1:5174', 'https://ornek.com.tr']) await expectOrigin(t, hAny, lic, origin, true);
  await expectOrigin(t, hAny, lic, 'null', false);
});

/** What loadConfig throws for this CORS_ORIGINS, null when it accepts it. */
function refusal(value: string): unknown {
  try {
    loadConfig(testEnv('cors-cfg', { CORS_ORIGINS: value }));
    return null;
  } catch (err) {
    return err;
  }
}

t.test('a bad CORS_ORIGINS refuses to start, naming CORS_ORIGINS', async (t) => {
  const bad = [
    'ornek.com.tr', 'https://', 'https://a.com/path', 'ftp://a.com', 'https://*', 'https://a.*.com', 'https://a.com:99999',
    'https://a.com:0', '*.ornek.com.tr', 'https://a.com, nonsense', 'https://user@a.com', 'https://a.com?x',
  ];
  for (const value of bad) {
    const error = refusal(value);
    t.ok(error instanceof ConfigError, `${JSON.stringify(value)} refused with a ConfigError (${String(error)})`);
    t.match(error instanceof Error ? error.message : '', /CORS_ORIGINS/, `${JSON.stringify(value)}: the message names CORS_ORIGINS`);
  }
  for (const value of [RULES, '*', 'http://127.0.0.1:5173,https://a.com', 'https://*.örnek.com.tr:8443']) {
    t.equal(refusal(value), null, `${JSON.stringify(value)} accepted`);
  }
});

// ---- property: any Origin value ------------------------------------------------------------

/** The rule of RULES, written from the brief rather than from the service's code. */
function expectedAllowed(origin: string): boolean {
  const m = /^(https?):\/\/([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(origin);
  if (!m) return false;
  const scheme = m[1] as string;
  const host = (m[2] as string).toLowerCase();
  const port = m[3] === undefined ? (scheme === 'https' ? 443 : 80) : Number(m[3]);
  const below = (apex: string): boolean => host.endsWith(`.${apex}`) && host.length > apex.length + 1;
  if (scheme === 'https' && port === 443 && (below('ornek.com.tr') || below('xn--rnek-4qa.com.tr'))) return true;
  return scheme === 'http' && port === 5173 && host === '127.0.0.1';
}

const label = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?$/);
const subdomain = fc.array(label, { minLength: 1, maxLength: 3 }).map((ls) => ls.join('.'));
const allowedOrigin = fc.oneof(
  fc.tuple(subdomain, fc.constantFrom('ornek.com.tr', 'xn--rnek-4qa.com.tr'), fc.constantFrom('', ':443'), fc.boolean())
    .map(([sub, apex, port, upper]) => `https://${upper ? sub.toUpperCase() : sub}.${apex}${port}`),
  fc.constant('http://127.0.0.1:5173'),
);
const nearMiss = fc.tuple(subdomain, fc.constantFrom(
  (s: string) => `http://${s}.ornek.com.tr`, (s: string) => `https://${s}.ornek.com.tr:8443`, (s: string) => `https://${s}.ornek.com.tr:80`,
  (s: string) => `https://${s.replace(/\./g, '')}ornek.com.tr`, (s: string) => `https://${s}.ornek.com.tr.evil.com`,
  (s: string) => `https://${s}.ornek.com.tr.`, () => 'https://ornek.com.tr', () => 'http://127.0.0.1:5174',
  () => 'https://127.0.0.1:5173', () => 'null', (s: string) => `https://${s}.ornek.com`,
)).map(([s, make]) => make(s));
const headerSafe = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 60 });
const randomText = fc.tuple(fc.constantFrom('', 'http://', 'https://'), headerSafe).map(([a, b]) => a + b)
  .filter((s) => s.trim() === s && s !== '');
const anyOrigin = fc.oneof(allowedOrigin, nearMiss, fc.webUrl().map((u) => new URL(u).origin), randomText);

t.test('property: any Origin value, a preflight or a real request: never 5xx, Allow-Origin exactly when allowed', async (t) => {
  const lic = await h.createLicense();
  const { accessToken } = await getTokenPair(h, lic);
  const requests: [string, (origin: string) => Promise<Answer>][] = [
    ...PUBLIC.map((p): [string, (o: string) => Promise<Answer>] => [`preflight ${p.name}`, (o) => preflight(h, p, o)]),
    ['check-quota', (o) => h.request('GET', `/api/License/check-quota/${lic.licenseKey}`, undefined, { origin: o })],
    ['get-token bad body', (o) => h.request('POST', '/api/v1/auth/get-token', {}, { origin: o })],
    ['validate empty token', (o) => h.request('POST', '/api/license/validate', { token: '' }, { origin: o })],
    ['sign-token no token', (o) => h.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, { origin: o })],
    ['history', (o) => h.request('GET', `/api/License/history/${lic.licenseKey}?limit=1`, undefined, { origin: o, ...bearer(accessToken) })],
  ];
  await fc.assert(fc.asyncProperty(anyOrigin, fc.constantFrom(...requests), async (origin, [what, send]) => {
    const res = await send(origin);
    const allowed = expectedAllowed(origin);
    const fail = (why: string): never => {
      throw new Error(`${what} from ${JSON.stringify(origin)} (allowed: ${allowed}): ${why}; status ${res.status}, headers ${JSON.stringify([...res.headers])}`);
    };
    if (res.status >= 500) fail('5xx');
    const acao = res.headers.get(ACAO);
    if (allowed && acao !== origin) fail('Allow-Origin is not the origin sent');
    if (!allowed && acao !== null) fail('Allow-Origin for an origin not allowed');
    const expose = res.headers.get('access-control-expose-headers');
    if (!what.startsWith('preflight') && (expose !== null) !== allowed) fail('Expose-Headers present iff allowed');
    if (what.startsWith('preflight') && res.status !== (allowed ? 204 : 403)) fail('preflight: 204 when allowed, 403 otherwise');
    if (res.headers.get('vary') !== 'Origin') fail('Vary: Origin');
  }), { seed: FUZZ_SEED, numRuns: 100, includeErrorInReport: true });
  t.pass(`100 Origin values, seed ${FUZZ_SEED}`);
});
