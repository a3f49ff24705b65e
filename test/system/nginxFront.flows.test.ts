import http2 from 'node:http2';
import t from 'tap';
import { adminView } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';
import { startNginxFront } from '../helpers/nginxFront.js';
import { rawExchange, rawRequest } from '../helpers/rawHttp.js';
import { release } from '../helpers/release.js';
import { mintTokens } from '../helpers/tokens.js';

// The answers of an instance without signing keys, of a malformed origin and of a keyed
// retry after a release, through the production front of deploy/nginx over HTTP/1.1 and
// HTTP/2: the service's own JSON reaches the client unchanged (the front replaces only the
// answers it makes itself), never nginx's page for a 503.

const APP = 'https://app.ornek.com.tr';
const MESSAGE = 'İmzalama anahtarı yapılandırılmamış (SIGNING_KEYS_FILE veya SIGNING_KEYS)';

interface Answer { status: number; body: unknown; retryAfter: string | undefined; allowOrigin?: string; vary?: string }

t.test('through the nginx front, over HTTP/1.1 and HTTP/2', async (t) => {
  const h = await startHarness(t, 'nginx-flows', { TRUST_PROXY: '1', SIGNING_KEYS: '', CORS_ORIGINS: APP });
  const front = await startNginxFront(t, h.service.port);
  const session = http2.connect(`https://127.0.0.1:${front.tlsPort}`, { rejectUnauthorized: false, servername: 'localhost' });
  t.teardown(() => session.close());

  async function viaHttp1(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const got = await rawExchange(front.tlsPort, rawRequest(method, path, body, headers), { tls: true, answers: 1 });
    const a = got.answers[0];
    if (a === undefined) throw new Error(`no answer to ${method} ${path}`);
    return { status: a.status, body: a.body, retryAfter: a.headers['retry-after'], allowOrigin: a.headers['access-control-allow-origin'], vary: a.headers.vary };
  }
  function viaHttp2(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = session.request({
        ':method': method, ':path': path, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      });
      let status = 0;
      let retryAfter: string | undefined;
      let allowOrigin: string | undefined;
      let vary: string | undefined;
      const chunks: Buffer[] = [];
      req.on('response', (head) => {
        status = Number(head[':status']);
        retryAfter = head['retry-after'] as string | undefined;
        allowOrigin = head['access-control-allow-origin'] as string | undefined;
        vary = head.vary as string | undefined;
      });
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve({ status, retryAfter, allowOrigin, vary, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown }));
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }
  const protocols = [['HTTP/1.1', viaHttp1], ['HTTP/2', viaHttp2]] as const;

  const lic = await h.createLicense({ totalQuota: 20, releasesPerDay: 5, domains: ['ornek.com.tr', '*.corp.ornek.com.tr'] });
  const { tokens } = await mintTokens(h, lic, 4);
  for (const [name, send] of protocols) {
    t.test(name, async (t) => {
      const sign = await send('POST', '/api/Signature/sign', { token: tokens[0], documents: [{ name: 'a.pdf', sha256: 'a'.repeat(64) }] });
      t.same([sign.status, sign.body, sign.retryAfter], [503, { success: false, message: MESSAGE }, undefined], 'sign without keys: the service\'s 503');
      const licenseValidation = await send('POST', '/api/License/validate', { licenseKey: lic.licenseKey, password: lic.password });
      t.same([licenseValidation.status, licenseValidation.body], [503, { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: MESSAGE } }],
        'license validation without keys: the service\'s coded 503');
      t.same((await send('GET', '/.well-known/jwks.json')).body, { keys: [] }, 'the empty key set');
      t.match((await send('GET', '/readyz')).body, { success: true, signingKeys: 'missing' }, 'ready, saying what is missing');
      const origin = await send('POST', '/api/license/validate', { token: tokens[0], origin: 'https://*.corp.ornek.com.tr' });
      t.same([origin.status, origin.body], [401, { success: false, message: 'Bu domain için yetki yok' }], 'a malformed origin: 401');
      const wrongMethod = await send('GET', '/api/v1/auth/get-token', undefined, { origin: APP });
      t.same([wrongMethod.status, wrongMethod.allowOrigin, wrongMethod.vary], [405, APP, 'Origin'], 'a 405 to an allowed page: its CORS fields reach it');
    });
  }

  t.test('a keyed retry after a release: 400 already used, over both protocols', async (t) => {
    const key = { 'idempotency-key': 'front-retry' };
    const first = await viaHttp1('POST', '/api/license/validate', { token: tokens[1], origin: 'https://a.corp.ornek.com.tr' }, key);
    t.equal(first.status, 200, 'redeemed through the front');
    t.equal((await release(h, tokens[1])).status, 200, 'released');
    for (const [name, send] of protocols) {
      const retried = await send('POST', '/api/license/validate', { token: tokens[1], origin: 'https://a.corp.ornek.com.tr' }, key);
      t.same([retried.status, retried.body], [400, { success: false, message: 'Bu token zaten kullanılmış. Yeni token alınız.' }], `${name}: already used`);
    }
    t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'nothing spent: the unit released, no retry charged, no 503 or 401 redeemed');
  });
});
