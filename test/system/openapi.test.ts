import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import type { Service } from '../../src/service.js';
import { ADMIN_TOKEN, createLicense, startHarness, startInProcessHarness, type TestLicense } from '../helpers/harness.js';
import type { Client } from '../helpers/http.js';
import { bearer, claimsOf, craftJwt, HS256_HEADER, ISSUER, nowSeconds } from '../helpers/jwt.js';
import { checkedClient, Documented, type Media, type OpenApi } from '../helpers/openapi.js';
import { getTokenPair, signOne } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// GET /openapi.json against the server that publishes it:
//  (a) every route the server registers is in the document, and every operation of the
//      document is a registered route (a route without a doc fails here, by name);
//  (b) every example, of a request body or an answer, validates against its schema;
//  (c) the document is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator, offline);
//  (d) real answers, happy paths and error paths of every route, match the documented
//      schema of their status, and every documented status was seen (503 aside: the
//      fault tests break Redis and Postgres, this one does not).
// The rate limits are low (3 a minute) so each 429 is reachable; each scenario uses
// licenses of its own, so the limits never get in each other's way.

const LIMIT = 3;
const h = await startHarness(t, 'openapi', {
  RATE_GET_TOKEN_PER_MIN: String(LIMIT),
  RATE_SIGN_TOKEN_PER_MIN: String(LIMIT),
  RATE_VALIDATE_PER_MIN: String(LIMIT),
  RATE_CHECK_QUOTA_PER_MIN: String(LIMIT),
  QUOTA_CACHE_SECONDS: '0',
});

const fetched = await h.request('GET', '/openapi.json');
const doc = fetched.body as OpenApi;
const documented = new Documented(doc);

/** "GET /path/{param}" of a route as registered. */
const routeName = (method: string, path: string): string => `${method.toUpperCase()} ${path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;

t.test('(a) the registered routes and the documented operations are the same set', async (t) => {
  t.equal(fetched.status, 200);
  t.match(fetched.headers.get('content-type') ?? '', /^application\/json/);
  // in this process: only the service object knows the routes it registers
  const { routes } = (await startInProcessHarness(t, 'openapi-routes')).service as Service;
  const registered = new Set(routes.map((r) => routeName(r.method, r.path)));
  const operations = new Set(Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => routeName(m, path))));
  t.ok(registered.size >= 14, `the server registers every route (${registered.size})`);
  for (const route of registered) t.ok(operations.has(route), `${route} is documented (give its Route a doc: src/openapi/routeDoc.ts)`);
  for (const op of operations) t.ok(registered.has(op), `${op} is a route the server registers`);
  for (const route of routes) {
    const tags = doc.paths[route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[route.method]?.tags ?? [];
    if (route.path.startsWith('/admin/')) t.same(tags, ['admin'], `${routeName(route.method, route.path)} is tagged admin`);
  }
});

t.test('(a) without ADMIN_TOKEN the admin API is still documented, and not served', async (t) => {
  const plain = await startHarness(t, 'openapi-noadmin', { ADMIN_TOKEN: '' });
  const res = await plain.request('GET', '/openapi.json');
  const paths = Object.keys((res.body as OpenApi).paths);
  t.same(paths.sort(), Object.keys(doc.paths).sort(), 'the same paths as with ADMIN_TOKEN');
  const read = (res.body as OpenApi).paths['/admin/v1/licenses/{licenseKey}']?.get as unknown as { description: string };
  t.match(read.description, /ADMIN_TOKEN is not set/, 'an admin operation says this instance does not serve it');
  t.equal((await plain.request('GET', `/admin/v1/licenses/${randomUUID()}`, undefined, bearer(ADMIN_TOKEN))).status, 404, 'and it is 404');
});

/** Every media object of the document (request bodies and answers), with where it is. */
function mediaObjects(): { where: string; segments: string[]; media: Media }[] {
  const out: { where: string; segments: string[]; media: Media }[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
        out.push({ where: `${method.toUpperCase()} ${path} request`, segments: ['paths', path, method, 'requestBody', 'content', type, 'schema'], media });
      }
      for (const [status, response] of Object.entries(op.responses)) {
        for (const [type, media] of Object.entries(response.content)) {
          out.push({ where: `${method.toUpperCase()} ${path} ${status}`, segments: ['paths', path, method, 'responses', status, 'content', type, 'schema'], media });
        }
      }
    }
  }
  return out;
}

t.test('(b) every example validates against its schema', async (t) => {
  let examples = 0;
  for (const { where, segments, media } of mediaObjects()) {
    const list = Object.values(media.examples ?? {});
    t.ok(list.length > 0, `${where} has an example`);
    const validate = documented.validatorAt(segments);
    for (const example of list) {
      examples++;
      t.ok(validate(example.value), `${where} "${example.summary}": ${validate(example.value) ? 'valid' : documented.errorsOf(validate)}`);
    }
  }
  t.ok(examples >= 80, `every answer has its examples (${examples})`);
  const all = JSON.stringify(doc);
  for (const message of ['Token boş olamaz', 'Token süresi dolmuş', 'Geçersiz token', 'Bu token zaten kullanılmış. Yeni token alınız.',
    'Bu domain için yetki yok', 'İmza kotası doldu', 'Çok fazla istek. Lütfen bekleyiniz.', 'Lisans anahtarı veya şifre hatalı',
    'Kota bilgisi başarıyla getirildi', 'Token doğrulandı, imza kotası düşüldü']) {
    t.ok(all.includes(JSON.stringify(message)), `the published message "${message}" is in an example`);
  }
});

t.test('(c) the document is valid OpenAPI 3.1', async (t) => {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc) as unknown as Parameters<Validator['validate']>[0]);
  t.ok(result.valid, `valid: ${JSON.stringify(result.errors ?? null).slice(0, 2000)}`);
  t.equal(validator.version, '3.1', 'OpenAPI 3.1');
  t.same(doc.components.securitySchemes && Object.keys(doc.components.securitySchemes).sort(), ['accessToken', 'adminToken']);
});

// ---- (d) real answers -----------------------------------------------------------------------

const mismatches: string[] = [];
const c: Client = checkedClient(h, documented, mismatches);
const admin = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  c.request(method, path, body, { ...bearer(ADMIN_TOKEN), ...headers });
const getToken = (lic: TestLicense, imzaTipi: unknown = 0) =>
  c.request('POST', '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi });
const validate = (token: unknown, origin?: string, headers: Record<string, string> = {}) =>
  c.request('POST', '/api/license/validate', origin === undefined ? { token } : { token, origin }, headers);
const checkQuota = (key: string) => c.request('GET', `/api/License/check-quota/${key}`);
const history = (key: string, accessToken: string | null, query = '') =>
  c.request('GET', `/api/License/history/${key}${query}`, undefined, accessToken === null ? {} : bearer(accessToken));
const license = (input: Parameters<typeof createLicense>[1] = {}) => createLicense(c, input);
const DAY_MS = 86_400_000;
const past = () => new Date(Date.now() - 2 * DAY_MS).toISOString();

/** Asserts the status, so a scenario that drifts from its purpose fails here and not by an unseen status. */
async function expect(t: Tap, status: number, what: string, res: Promise<{ status: number; text: string }>): Promise<void> {
  const r = await res;
  t.equal(r.status, status, `${what}: ${r.status} ${r.text.slice(0, 200)}`);
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('(d) get-token', async (t) => {
  const lic = await license();
  await expect(t, 200, 'issued', getToken(lic));
  await expect(t, 400, 'imzaTipi 2', getToken(lic, 2));
  await expect(t, 401, 'wrong password', getToken({ ...lic, password: 'wrong' }));
  await expect(t, 401, 'expired', getToken(await license({ expiryDate: past() })));
  await expect(t, 401, 'inactive', getToken(await license({ isActive: false })));
  await expect(t, 400, 'no quota', getToken(await license({ totalQuota: 0 })));
  const limited = await license();
  for (let i = 0; i < LIMIT; i++) await getToken(limited);
  await expect(t, 429, 'over the limit', getToken(limited));
});

t.test('(d) sign-token, validate and check-quota through a license\'s life', async (t) => {
  const lic = await license({ totalQuota: 1 });
  const { accessToken, signToken } = await getTokenPair(c, lic);
  const second = await signOne(c, accessToken);
  await expect(t, 200, 'check-quota', checkQuota(lic.licenseKey));
  await expect(t, 200, 'redeemed', validate(signToken, undefined, { 'idempotency-key': 'openapi-1' }));
  await expect(t, 400, 'quota exhausted', validate(second));
  await expect(t, 400, 'already used', validate(signToken));
  await expect(t, 400, 'sign-token without quota', c.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, bearer(accessToken)));
  await expect(t, 400, 'sign-token bad imzaTipi', c.request('POST', '/api/v1/auth/sign-token', { imzaTipi: '0' }, bearer(accessToken)));
  await expect(t, 401, 'sign-token without a token', c.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }));
  await expect(t, 429, 'check-quota of a used-up license', checkQuota(lic.licenseKey));
  for (let i = 0; i < LIMIT; i++) await checkQuota(lic.licenseKey);
  await expect(t, 429, 'check-quota over the limit', checkQuota(lic.licenseKey));

  await expect(t, 400, 'check-quota of no UUID', checkQuota('not-a-uuid'));
  await expect(t, 404, 'check-quota of an unknown key', checkQuota(randomUUID()));
  await expect(t, 410, 'check-quota of an expired license', checkQuota((await license({ expiryDate: past() })).licenseKey));
  await expect(t, 403, 'check-quota of an inactive license', checkQuota((await license({ isActive: false })).licenseKey));

  const busy = await license({ totalQuota: 50 });
  const pair = await getTokenPair(c, busy);
  for (let i = 0; i < LIMIT - 1; i++) await expect(t, 200, 'sign-token', c.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 1 }, bearer(pair.accessToken)));
  await c.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 1 }, bearer(pair.accessToken));
  await expect(t, 429, 'sign-token over the limit', c.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 1 }, bearer(pair.accessToken)));
});

t.test('(d) validate\'s refusals', async (t) => {
  await expect(t, 400, 'no token', validate(''));
  await expect(t, 400, 'not an object', c.request('POST', '/api/license/validate', '[1]'));
  await expect(t, 400, 'bad Idempotency-Key', validate('x', undefined, { 'idempotency-key': 'k'.repeat(256) }));
  await expect(t, 401, 'malformed', validate('not.a.jwt'));
  const lic = await license({ domains: ['ornek.com.tr'] });
  const { accessToken, signToken } = await getTokenPair(c, lic);
  const claims = claimsOf(signToken);
  const secret = h.config.jwtKeys[0]!.secret;
  const stale = craftJwt({ ...HS256_HEADER, kid: h.config.jwtKeys[0]!.kid }, { ...claims, iat: nowSeconds() - 600, exp: nowSeconds() - 300, iss: ISSUER }, secret);
  await expect(t, 401, 'expired', validate(stale, 'https://ornek.com.tr'));
  await expect(t, 401, 'origin refused', validate(signToken, 'https://baska.example'));
  await expect(t, 200, 'redeemed with a key', validate(signToken, 'https://ornek.com.tr', { 'idempotency-key': 'openapi-2' }));
  const other = await signOne(c, accessToken);
  await expect(t, 422, 'the key of another token', validate(other, 'https://ornek.com.tr', { 'idempotency-key': 'openapi-2' }));
  const limited = await license({ domains: ['ornek.com.tr'] });
  const token = (await getTokenPair(c, limited)).signToken;
  for (let i = 0; i < LIMIT; i++) await validate(token, 'https://baska.example');
  await expect(t, 429, 'over the limit', validate(token, 'https://ornek.com.tr'));
});

t.test('(d) history', async (t) => {
  const lic = await license({ totalQuota: 5 });
  const { accessToken, signToken } = await getTokenPair(c, lic);
  await expect(t, 200, 'redeemed', validate(signToken));
  await expect(t, 200, 'redeemed', validate(await signOne(c, accessToken), 'https://eczane.example'));
  await h.drainWorker();
  const page = await history(lic.licenseKey, accessToken, '?limit=1');
  t.equal(page.status, 200);
  t.equal(page.body.data.items.length, 1, 'one item');
  t.type(page.body.data.nextCursor, 'string', 'and a cursor');
  await expect(t, 200, 'the next page', history(lic.licenseKey, accessToken, `?limit=1&cursor=${page.body.data.nextCursor}`));
  await expect(t, 400, 'key not a UUID', history('nope', accessToken));
  await expect(t, 400, 'limit over 500', history(lic.licenseKey, accessToken, '?limit=501'));
  await expect(t, 400, 'a cursor not handed out', history(lic.licenseKey, accessToken, '?cursor=zzz'));
  await expect(t, 401, 'no token', history(lic.licenseKey, null));
  await expect(t, 403, 'another license\'s token', history((await license()).licenseKey, accessToken));
});

t.test('(d) the admin API', async (t) => {
  const key = randomUUID();
  await license({ licenseKey: key });
  const path = `/admin/v1/licenses/${key}`;
  await expect(t, 409, 'create: key taken', admin('POST', '/admin/v1/licenses', { organizationName: 'X', password: 'p', totalQuota: 1, expiryDate: past(), licenseKey: key }));
  await expect(t, 400, 'create: bad totalQuota', admin('POST', '/admin/v1/licenses', { organizationName: 'X', password: 'p', totalQuota: -1, expiryDate: past() }));
  await expect(t, 401, 'create: no token', c.request('POST', '/admin/v1/licenses', {}));
  await expect(t, 200, 'read', admin('GET', path));
  await expect(t, 404, 'read: unknown', admin('GET', `/admin/v1/licenses/${randomUUID()}`));
  await expect(t, 401, 'read: wrong token', c.request('GET', path, undefined, bearer('not-the-admin-token-at-all')));
  await expect(t, 200, 'patch', admin('PATCH', path, { isActive: false, domains: ['eczane.example'] }));
  await expect(t, 400, 'patch: empty', admin('PATCH', path, {}));
  await expect(t, 404, 'patch: unknown', admin('PATCH', `/admin/v1/licenses/${randomUUID()}`, { isActive: true }));
  await expect(t, 401, 'patch: no token', c.request('PATCH', path, { isActive: true }));
  await expect(t, 200, 'quota', admin('POST', `${path}/quota`, { add: 5 }, { 'idempotency-key': 'purchase-1' }));
  await expect(t, 422, 'quota: key of another purchase', admin('POST', `${path}/quota`, { add: 6 }, { 'idempotency-key': 'purchase-1' }));
  await expect(t, 400, 'quota: add 0', admin('POST', `${path}/quota`, { add: 0 }));
  await expect(t, 400, 'quota: bad key', admin('POST', `${path}/quota`, { add: 1 }, { 'idempotency-key': 'x'.repeat(256) }));
  await expect(t, 404, 'quota: unknown', admin('POST', `/admin/v1/licenses/${randomUUID()}/quota`, { add: 1 }));
  await expect(t, 401, 'quota: no token', c.request('POST', `${path}/quota`, { add: 1 }));

  await expect(t, 200, 'list', admin('GET', '/admin/v1/licenses?limit=2'));
  await expect(t, 400, 'list: limit 501', admin('GET', '/admin/v1/licenses?limit=501'));
  await expect(t, 400, 'list: a cursor not handed out', admin('GET', '/admin/v1/licenses?cursor=zzz'));
  await expect(t, 401, 'list: no token', c.request('GET', '/admin/v1/licenses'));
  const spender = await license();
  const { signToken } = await getTokenPair(c, spender);
  await expect(t, 200, 'a redemption to list', validate(signToken));
  const tokens = `/admin/v1/licenses/${spender.licenseKey}/tokens`;
  await pollUntil(() => admin('GET', tokens), (r) => (r.body as { data: { items: unknown[] } }).data.items.length > 0);
  await expect(t, 200, 'tokens', admin('GET', `${tokens}?status=used`));
  await expect(t, 400, 'tokens: status unknown', admin('GET', `${tokens}?status=lost`));
  await expect(t, 404, 'tokens: unknown license', admin('GET', `/admin/v1/licenses/${randomUUID()}/tokens`));
  await expect(t, 401, 'tokens: no token', c.request('GET', tokens));
});

t.test('(d) operations and documentation', async (t) => {
  await expect(t, 200, 'healthz', c.request('GET', '/healthz'));
  await expect(t, 200, 'metrics', c.request('GET', '/metrics'));
  await expect(t, 200, 'readyz', c.request('GET', '/readyz'));
  await expect(t, 200, 'openapi.json', c.request('GET', '/openapi.json'));
  await expect(t, 200, 'docs', c.request('GET', '/docs'));
  await expect(t, 200, 'an asset', c.request('GET', '/docs/init.js'));
  await expect(t, 404, 'no such asset', c.request('GET', '/docs/nothing.js'));
  await expect(t, 200, 'dashboard', c.request('GET', '/dashboard'));
  await expect(t, 200, 'a dashboard file', c.request('GET', '/dashboard/dashboard.css'));
  await expect(t, 404, 'no such dashboard file', c.request('GET', '/dashboard/nothing.js'));
});

t.test('(e) /docs serves its page and every file the page links, from this service', async (t) => {
  const page = await h.request('GET', '/docs');
  t.equal(page.status, 200);
  t.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  t.equal(page.headers.get('cache-control'), 'no-cache');
  const csp = page.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'self'/, 'a Content-Security-Policy of \'self\'');
  t.notMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/, 'no inline script, no eval, no other host');
  t.notMatch(page.text, /<script>|<style>|\sstyle=|\son[a-z]+=/i, 'no inline script or style the policy would block');
  const links = [...page.text.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1] as string);
  t.ok(links.length >= 4, `the page links its files (${links.join(', ')})`);
  const types: Record<string, RegExp> = { css: /^text\/css/, js: /^text\/javascript/, png: /^image\/png$/ };
  for (const link of links) {
    t.notMatch(link, /^(https?:)?\/\//, `${link}: on this service, no CDN`);
    const url = new URL(link, `${h.url}/docs`);
    const res = await fetch(url);
    const body = new Uint8Array(await res.arrayBuffer());
    t.equal(res.status, 200, `${url.pathname}: 200`);
    t.match(res.headers.get('content-type') ?? '', types[link.split('.').pop() as string] ?? /^$/, `${url.pathname}: its Content-Type`);
    t.equal(res.headers.get('cache-control'), 'public, max-age=86400', `${url.pathname}: kept a day`);
    t.ok(body.byteLength > 0, `${url.pathname}: not empty`);
  }
  const init = await h.request('GET', '/docs/init.js');
  t.match(init.text, /url: 'openapi\.json'/, 'the initializer loads this document');
  t.equal((await h.request('GET', '/docs/swagger-ui-bundle.js.map')).status, 404, 'files not linked are not served');
});

t.test('(d) 413 on every route that reads a body', async (t) => {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op.requestBody) continue;
      const concrete = path.replace(/\{[^}]+\}/g, randomUUID());
      await expect(t, 413, `${method.toUpperCase()} ${path}`, c.request(method.toUpperCase(), concrete, `{"x":"${'a'.repeat(70_000)}"}`));
    }
  }
});

t.test('(d) every answer matched the document, and every documented status was seen', async (t) => {
  t.same(mismatches, [], 'no answer differs from the document');
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      for (const status of Object.keys(op.responses)) {
        if (status === '503') continue; // the fault tests (test/faults) break Redis and Postgres; this one does not
        t.ok(documented.seen.has(`${method} ${path} ${status}`), `${method.toUpperCase()} ${path} ${status} was answered by a real request here`);
      }
    }
  }
});

