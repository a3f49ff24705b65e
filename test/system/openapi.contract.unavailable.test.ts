import t from 'tap';
import { startContract } from '../helpers/contract.js';
import type { Client } from '../helpers/http.js';
import { bearer } from '../helpers/jwt.js';
import { startPrivateRedis } from '../helpers/processes.js';
import { startPostgresProxy } from '../helpers/proxy.js';
import { getTokenPair } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// The 503 of every operation that lists one, against the document: the service as `npm
// start` runs it (default settings) on a private redis-server, paused (SIGSTOP: every
// Redis call times out after REDIS_COMMAND_TIMEOUT_MS), and on Postgres through a proxy,
// cut (connections dropped, new ones refused). Each answer is held to its operation's
// documented 503: the error shape of its endpoint with Retry-After, or for /healthz and
// /readyz their own body. Both come back before the cleanup. /metrics waits on neither: its
// 503 is a primary that does not gather the processes' figures in time (paused here).

const { proxy, url: databaseUrl } = await startPostgresProxy(t);
const redis = await startPrivateRedis(t);
const k = await startContract(t, 'oa-unavailable', { REDIS_URL: redis.url, DATABASE_URL: databaseUrl });

const lic = await k.license();
const { accessToken, signToken } = await getTokenPair(k.c, lic);
const key = `/admin/v1/licenses/${lic.licenseKey}`;

/** A request of each operation that lists 503, one that reaches Redis or Postgres. */
const requests: Record<string, (c: Client) => Promise<unknown>> = {
  'post /api/v1/auth/get-token': (c) => c.request('POST', '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 }),
  'post /api/v1/auth/sign-token': (c) => c.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, bearer(accessToken)),
  'post /api/license/validate': (c) => c.request('POST', '/api/license/validate', { token: signToken }),
  'post /api/license/release': (c) => c.request('POST', '/api/license/release', { token: signToken }),
  'post /api/signature/sign': (c) => c.request('POST', '/api/Signature/sign', { token: signToken, documents: [{ name: 'belge.pdf', sha256: 'a'.repeat(64) }] }),
  'get /api/license/check-quota/{licenseKey}': (c) => c.request('GET', `/api/License/check-quota/${lic.licenseKey}`),
  'get /api/license/history/{licenseKey}': (c) => c.request('GET', `/api/License/history/${lic.licenseKey}`, undefined, bearer(accessToken)),
  'get /api/license/ledger/{licenseKey}': (c) => c.request('GET', `/api/License/ledger/${lic.licenseKey}`, undefined, bearer(accessToken)),
  // their answer may be up to a second old: asked until it is the outage's
  'get /healthz': (c) => pollUntil(() => c.request('GET', '/healthz'), (r) => r.status !== 200, { timeoutMs: 10_000, intervalMs: 100 }),
  'get /readyz': (c) => pollUntil(() => c.request('GET', '/readyz'), (r) => r.status !== 200, { timeoutMs: 10_000, intervalMs: 100 }),
  'post /admin/v1/licenses': () => k.admin('POST', '/admin/v1/licenses', { organizationName: 'X', password: 'p', totalQuota: 1, expiryDate: new Date(Date.now() + 86_400_000).toISOString() }),
  'get /admin/v1/licenses/{licenseKey}': () => k.admin('GET', key),
  'patch /admin/v1/licenses/{licenseKey}': () => k.admin('PATCH', key, { isActive: false }),
  'post /admin/v1/licenses/{licenseKey}/quota': () => k.admin('POST', `${key}/quota`, { add: 1 }),
  'get /admin/v1/licenses': () => k.admin('GET', '/admin/v1/licenses'),
  'get /admin/v1/licenses/{licenseKey}/tokens': () => k.admin('GET', `${key}/tokens`),
  'get /admin/v1/licenses/{licenseKey}/ledger': () => k.admin('GET', `${key}/ledger`),
  'get /admin/v1/audit': () => k.admin('GET', '/admin/v1/audit'),
};

t.test('every operation that lists 503 answers it, as documented, while Redis hangs and Postgres is cut', async (t) => {
  const listed = Object.entries(k.doc.paths).flatMap(([path, item]) => Object.entries(item)
    .filter(([, op]) => op.responses['503'] !== undefined).map(([method]) => `${method} ${path}`));
  t.same(listed.sort(), [...Object.keys(requests), 'get /metrics'].sort(), 'a request here (or below, /metrics) for each operation that lists 503 (the others answer from memory)');
  await redis.signal('SIGSTOP');
  proxy.cut();
  try {
    for (const [op, send] of Object.entries(requests)) {
      const res = await send(k.c) as { status: number; headers: Headers; text: string };
      t.equal(res.status, 503, `${op}: ${res.text.slice(0, 200)}`);
    }
  } finally {
    await redis.signal('SIGCONT');
    proxy.restore();
  }
  const ready = await pollUntil(() => k.c.request('GET', '/readyz'), (r) => r.status === 200, { timeoutMs: 20_000 });
  t.equal(ready.status, 200, 'back: /readyz is 200 again');
});

t.test('GET /metrics: 503 as documented while the primary cannot gather the processes\' figures', async (t) => {
  k.server.child.kill('SIGSTOP');
  try {
    const res = await k.c.request('GET', '/metrics');
    t.equal(res.status, 503, `a scrape with the primary paused: ${res.text.slice(0, 200)}`);
  } finally {
    k.server.child.kill('SIGCONT');
  }
  const back = await pollUntil(() => k.c.request('GET', '/metrics'), (r) => r.status === 200, { timeoutMs: 10_000 });
  t.equal(back.status, 200, 'the primary resumed: 200 again');
});

t.test('every answer matched the document, and every documented 503 was seen', async (t) => {
  k.finish(t, (op) => op.split(' ').length === 2 || op.endsWith(' 503'));
});
