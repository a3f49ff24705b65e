import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startContract } from '../helpers/contract.js';
import { bearer } from '../helpers/jwt.js';
import type { OpenApi } from '../helpers/openapi.js';

// What the HTTP layer answers by itself, against the document, on the service as `npm start`
// runs it: 405 to a method a path does not serve (HEAD without a body), 413 to a body over
// the limit on every operation that reads one, 404 for paths no route serves, HEAD of the
// pages, and the CORS preflight of each public path, with CORS off (the default) and on.
// Then an instance configured otherwise (CORS_ORIGINS, METRICS_TOKEN, no ADMIN_TOKEN)
// against its own document.

const k = await startContract(t, 'oa-http');

/** A request path of a path template: a UUID for a key, a file the route serves. */
function concrete(template: string): string {
  return template.replace('{licenseKey}', randomUUID()).replace('/docs/{asset}', '/docs/init.js').replace('/dashboard/{asset}', '/dashboard/dashboard.css');
}

const operations = (doc: OpenApi) => Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((method) => ({ method, path })));

t.test('405 on every path, with Allow; HEAD without a body', async (t) => {
  for (const path of Object.keys(k.doc.paths)) {
    // Allow is held to its documented value (the path's methods) by the checked client
    await k.expect(t, 405, `DELETE ${path}`, k.c.request('DELETE', concrete(path)));
    if (k.doc.paths[path]?.get && !k.doc.paths[path]?.head) {
      const head = await k.expect(t, 405, `HEAD ${path}`, k.c.request('HEAD', concrete(path)));
      t.equal(head.text, '', 'no body');
    }
  }
});

t.test('413 on every operation that reads a body, in its error shape', async (t) => {
  for (const { method, path } of operations(k.doc)) {
    if (!k.doc.paths[path]?.[method]?.requestBody) continue;
    const res = await k.expect(t, 413, `${method.toUpperCase()} ${path}`, k.c.request(method.toUpperCase(), concrete(path), `{"x":"${'a'.repeat(70_000)}"}`));
    t.equal(res.headers.get('connection'), 'close', 'the connection closes');
  }
});

t.test('404 for paths no route serves', async (t) => {
  for (const path of ['/nothing', '/api/license/check-quota/', `/api/license/check-quota/${randomUUID()}/more`, '/admin/v1/nothing']) {
    const res = await k.expect(t, 404, path, k.c.request('GET', path));
    t.equal(res.body.error.code, 'NOT_FOUND');
  }
  t.ok(k.documented.seen.has('NotFound'), 'held to components.responses.NotFound');
});

t.test('HEAD of the pages: the GET\'s status and headers, no body', async (t) => {
  for (const [path, status] of [['/', 200], ['/dashboard', 200], ['/dashboard/dashboard.css', 200], ['/dashboard/nothing.js', 404]] as const) {
    const res = await k.expect(t, status, `HEAD ${path}`, k.c.request('HEAD', path));
    t.equal(res.text, '', 'no body');
  }
});

t.test('preflights with CORS off: plain OPTIONS 204 with Allow, any Origin 403', async (t) => {
  for (const { method, path } of operations(k.doc)) {
    if (method !== 'options') continue;
    const plain = await k.expect(t, 204, `OPTIONS ${path}`, k.c.request('OPTIONS', concrete(path)));
    t.ok(plain.headers.get('allow')?.endsWith('OPTIONS'), 'Allow names OPTIONS');
    const refused = await k.expect(t, 403, `OPTIONS ${path} with Origin`, k.c.request('OPTIONS', concrete(path), undefined, { origin: 'https://imza.ornek.com.tr' }));
    t.match(refused.text, /ORIGIN_NOT_ALLOWED|Origin/, 'ORIGIN_NOT_ALLOWED in the path\'s shape (validate\'s: the message alone)');
    t.equal(refused.headers.get('vary'), null, 'no Vary: CORS is off');
  }
});

t.test('every answer matched the document, and every documented status was seen', async (t) => {
  k.finish(t, (op) => {
    const [method, , status] = op.split(' ') as [string, string, string?];
    return method === 'options' || method === 'head' ? status !== '405' && status !== '503' : status === undefined || status === '405' || status === '413';
  });
});

t.test('an instance with CORS_ORIGINS, METRICS_TOKEN and check-quota\'s limit off, without ADMIN_TOKEN, against its own document', async (t) => {
  const METRICS_TOKEN = 'metrics-token-0123456789';
  const other = await startContract(t, 'oa-http-cors', { CORS_ORIGINS: 'https://*.ornek.com.tr', METRICS_TOKEN, ADMIN_TOKEN: '', RATE_CHECK_QUOTA_PER_MIN: '0' });
  const allowed = { origin: 'https://imza.ornek.com.tr' };
  for (const { method, path } of operations(other.doc)) {
    if (method !== 'options') continue;
    const granted = await other.expect(t, 204, `preflight of ${path} from an allowed origin`, other.c.request('OPTIONS', concrete(path), undefined, allowed));
    t.equal(granted.headers.get('access-control-allow-origin'), allowed.origin, 'the origin echoed');
    t.equal(granted.headers.get('vary'), 'Origin');
    await other.expect(t, 204, `plain OPTIONS ${path}`, other.c.request('OPTIONS', concrete(path)));
    await other.expect(t, 403, `preflight of ${path} from another origin`, other.c.request('OPTIONS', concrete(path), undefined, { origin: 'https://ornek.com.tr' }));
  }
  const answer = await other.expect(t, 404, 'check-quota from an allowed origin', other.c.request('GET', `/api/License/check-quota/${randomUUID()}`, undefined, allowed));
  t.equal(answer.headers.get('access-control-allow-origin'), allowed.origin, 'a real answer carries the CORS headers');
  t.equal(answer.headers.get('ratelimit'), null, 'a limit set to 0 sends no RateLimit fields');
  const responses = Object.values(other.doc.paths['/api/license/check-quota/{licenseKey}']?.get?.responses ?? {});
  t.notOk(responses.some((r) => 'headers' in r && r.headers && ('RateLimit-Policy' in r.headers || 'RateLimit' in r.headers)), 'and its document lists none');
  await other.expect(t, 400, 'validate from another origin', other.c.request('POST', '/api/license/validate', { token: '' }, { origin: 'https://baska.example' }));
  const denied = await other.expect(t, 401, '/metrics without its token', other.c.request('GET', '/metrics'));
  t.match(denied.headers.get('www-authenticate'), /^Bearer/);
  await other.expect(t, 200, '/metrics with its token', other.c.request('GET', '/metrics', undefined, bearer(METRICS_TOKEN)));
  await other.expect(t, 404, 'the admin API, not served', other.c.request('POST', '/admin/v1/licenses', {}));
  await other.expect(t, 404, 'a license, not served', other.c.request('GET', `/admin/v1/licenses/${randomUUID()}`));
  other.finish(t, (op) => {
    const [method, path, status] = op.split(' ') as [string, string, string?];
    return method === 'options' || (path === '/metrics' && (status === undefined || status === '401'));
  });
});
