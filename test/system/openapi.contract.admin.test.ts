import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startContract } from '../helpers/contract.js';
import { bearer } from '../helpers/jwt.js';
import { getTokenPair } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// The admin API, the operations routes, the documentation and the dashboard against the
// documents, on the service as `npm start` runs it with default settings: every row of each
// route's error table, each answer's status, body and headers checked against the document
// of its path: /admin/openapi.json for the admin API and its documentation, /openapi.json
// for the rest. 405, 413, 503: openapi.contract.http and openapi.contract.unavailable.

const k = await startContract(t, 'oa-admin');
t.ok(k.adminDoc?.paths['/admin/v1/licenses']?.post, 'the admin API is read from /admin/openapi.json');
t.notOk(Object.keys(k.documented.publicDoc.doc.paths).some((p) => p.startsWith('/admin/')), 'and from there alone');
const past = () => new Date(Date.now() - 2 * 86_400_000).toISOString();
const NO_RATE_LIMIT = { rateLimit: false };

t.test('create, read, change, credit', async (t) => {
  const key = randomUUID();
  await k.license({ licenseKey: key });
  const path = `/admin/v1/licenses/${key}`;
  const create = (body: unknown) => k.admin('POST', '/admin/v1/licenses', body);
  await k.expect(t, 201, 'create with webhook', create({
    organizationName: 'X', password: 'p', totalQuota: 1, expiryDate: past(), webhookUrl: 'https://hooks.example/imza', webhookSecret: 's'.repeat(16),
  }));
  await k.expect(t, 409, 'create: key taken', create({ organizationName: 'X', password: 'p', totalQuota: 1, expiryDate: past(), licenseKey: key }));
  await k.expect(t, 400, 'create: bad totalQuota', create({ organizationName: 'X', password: 'p', totalQuota: -1, expiryDate: past() }));
  await k.expect(t, 400, 'create: a domain that is no host name', create({ organizationName: 'X', password: 'p', totalQuota: 1, expiryDate: past(), domains: ['https://'] }));
  await k.expect(t, 400, 'create: an http:// webhook', create({
    organizationName: 'X', password: 'p', totalQuota: 1, expiryDate: past(), webhookUrl: 'http://hooks.example/imza', webhookSecret: 's'.repeat(16),
  }));
  await k.expect(t, 400, 'create: a webhook to an internal address', create({
    organizationName: 'X', password: 'p', totalQuota: 1, expiryDate: past(), webhookUrl: 'https://169.254.169.254/', webhookSecret: 's'.repeat(16),
  }));
  await k.expect(t, 401, 'create: no token', k.c.request('POST', '/admin/v1/licenses', {}));
  await k.expect(t, 200, 'read', k.admin('GET', path));
  await k.expect(t, 404, 'read: unknown', k.admin('GET', `/admin/v1/licenses/${randomUUID()}`));
  await k.expect(t, 404, 'read: no UUID', k.admin('GET', '/admin/v1/licenses/not-a-uuid'));
  await k.expect(t, 401, 'read: wrong token', k.c.request('GET', path, undefined, bearer('not-the-admin-token-at-all')));
  await k.expect(t, 200, 'patch', k.admin('PATCH', path, { isActive: false, domains: ['eczane.example'] }));
  await k.expect(t, 400, 'patch: empty', k.admin('PATCH', path, {}));
  await k.expect(t, 400, 'patch: an http:// webhook', k.admin('PATCH', path, { webhookUrl: 'http://hooks.example/imza', webhookSecret: 's'.repeat(16) }));
  await k.expect(t, 400, 'patch: a webhook to an internal address', k.admin('PATCH', path, { webhookUrl: 'https://localhost/', webhookSecret: 's'.repeat(16) }));
  await k.expect(t, 404, 'patch: unknown', k.admin('PATCH', `/admin/v1/licenses/${randomUUID()}`, { isActive: true }));
  await k.expect(t, 401, 'patch: no token', k.c.request('PATCH', path, { isActive: true }));
  await k.expect(t, 200, 'quota', k.admin('POST', `${path}/quota`, { add: 5 }, { 'idempotency-key': 'purchase-1' }));
  await k.expect(t, 422, 'quota: key of another purchase', k.admin('POST', `${path}/quota`, { add: 6 }, { 'idempotency-key': 'purchase-1' }));
  await k.expect(t, 400, 'quota: add 0', k.admin('POST', `${path}/quota`, { add: 0 }));
  await k.expect(t, 400, 'quota: bad key', k.admin('POST', `${path}/quota`, { add: 1 }, { 'idempotency-key': 'x'.repeat(256) }));
  await k.expect(t, 404, 'quota: unknown', k.admin('POST', `/admin/v1/licenses/${randomUUID()}/quota`, { add: 1 }));
  await k.expect(t, 401, 'quota: no token', k.c.request('POST', `${path}/quota`, { add: 1 }));
});

t.test('the lists', async (t) => {
  await k.expect(t, 200, 'list', k.admin('GET', '/admin/v1/licenses?limit=2'));
  await k.expect(t, 400, 'list: limit 501', k.admin('GET', '/admin/v1/licenses?limit=501'));
  await k.expect(t, 400, 'list: a cursor not handed out', k.admin('GET', '/admin/v1/licenses?cursor=zzz'));
  await k.expect(t, 401, 'list: no token', k.c.request('GET', '/admin/v1/licenses'));
  const spender = await k.license();
  const { signToken } = await getTokenPair(k.c, spender);
  await k.expect(t, 200, 'a redemption to list', k.c.request('POST', '/api/license/validate', { token: signToken }));
  const tokens = `/admin/v1/licenses/${spender.licenseKey}/tokens`;
  await pollUntil(() => k.admin('GET', tokens), (r) => (r.body as { data: { items: unknown[] } }).data.items.length > 0);
  await k.expect(t, 200, 'tokens', k.admin('GET', `${tokens}?status=used`));
  await k.expect(t, 400, 'tokens: status unknown', k.admin('GET', `${tokens}?status=lost`));
  await k.expect(t, 400, 'tokens: limit 0', k.admin('GET', `${tokens}?limit=0`));
  await k.expect(t, 400, 'tokens: a cursor not handed out', k.admin('GET', `${tokens}?cursor=zzz`));
  await k.expect(t, 404, 'tokens: unknown license', k.admin('GET', `/admin/v1/licenses/${randomUUID()}/tokens`));
  await k.expect(t, 401, 'tokens: no token', k.c.request('GET', tokens));

  const ledger = `/admin/v1/licenses/${spender.licenseKey}/ledger`;
  await k.expect(t, 200, 'ledger', k.admin('GET', ledger));
  await k.expect(t, 400, 'ledger: a cursor not handed out', k.admin('GET', `${ledger}?cursor=zzz`));
  await k.expect(t, 404, 'ledger: unknown license', k.admin('GET', `/admin/v1/licenses/${randomUUID()}/ledger`));
  await k.expect(t, 401, 'ledger: no token', k.c.request('GET', ledger));
});

t.test('the audit log', async (t) => {
  await k.expect(t, 200, 'audit', k.admin('GET', '/admin/v1/audit?limit=2'));
  await k.expect(t, 200, 'audit of a license since a date', k.admin('GET', `/admin/v1/audit?licenseKey=${randomUUID()}&since=2020-01-01T00:00:00Z`));
  await k.expect(t, 400, 'audit: licenseKey not a UUID', k.admin('GET', '/admin/v1/audit?licenseKey=abc'));
  await k.expect(t, 400, 'audit: since not a date-time', k.admin('GET', '/admin/v1/audit?since=yesterday'));
  await k.expect(t, 400, 'audit: limit 501', k.admin('GET', '/admin/v1/audit?limit=501'));
  await k.expect(t, 400, 'audit: a cursor not handed out', k.admin('GET', '/admin/v1/audit?cursor=zzz'));
  await k.expect(t, 401, 'audit: no token', k.c.request('GET', '/admin/v1/audit'));
});

t.test('operations, documentation, dashboard', async (t) => {
  for (const path of ['/', '/healthz', '/readyz', '/metrics', '/.well-known/jwks.json', '/dashboard', '/dashboard/dashboard.css']) {
    await k.expect(t, 200, path, (c) => c.request('GET', path), NO_RATE_LIMIT);
  }
  // the documentation, from memory: 200 with its ETag, then 304 without a body for that ETag
  for (const path of ['/openapi.json', '/docs', '/docs/interactive', '/docs/init.js', '/admin/openapi.json', '/admin/docs', '/admin/docs/interactive']) {
    const first = await k.expect(t, 200, path, (c) => c.request('GET', path), NO_RATE_LIMIT);
    const again = await k.expect(t, 304, `${path} with its ETag`, (c) => c.request('GET', path, undefined, { 'if-none-match': first.headers.get('etag') ?? '' }), NO_RATE_LIMIT);
    t.equal(again.text, '', 'no body');
  }
  await k.expect(t, 200, '/ as a page, for a browser', (c) => c.request('GET', '/', undefined, { accept: 'text/html' }), NO_RATE_LIMIT);
  await k.expect(t, 404, 'no such file under /docs', k.c.request('GET', '/docs/nothing.js'));
  await k.expect(t, 404, 'a file name in another case', k.c.request('GET', '/docs/INIT.JS'));
  await k.expect(t, 404, 'no such dashboard file', k.c.request('GET', '/dashboard/nothing.js'));
});

t.test('every answer matched the document, and every documented status was seen', async (t) => {
  k.finish(t, (op) => {
    const [method, path, status] = op.split(' ') as [string, string, string?];
    // /healthz and /readyz answer 503 in openapi.contract.unavailable, HEAD and OPTIONS in openapi.contract.http
    return method !== 'head' && method !== 'options' && !path.startsWith('/api/') && !['405', '413', '503'].includes(status ?? '');
  });
});
