import t from 'tap';
import { HSTS } from '../../src/http/answer.js';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';
import { ADDRESSES, http2Exchange, PROTOCOLS, viaFront, type Protocol } from '../helpers/http2Client.js';
import { parseMetrics } from '../helpers/metrics.js';
import { hopByHopHeaders } from '../helpers/openapi.js';
import { startNginxFront } from '../helpers/nginxFront.js';
import { freeLoopbackPort } from '../helpers/processes.js';
import { rawExchange, type RawAnswer } from '../helpers/rawHttp.js';

// Who reaches what through the production front of deploy/nginx, over HTTP/1.1 and HTTP/2
// alike: the admin API and /metrics only from the addresses its geo block names, health
// checks on port 80 whatever their Host, the JWKS from nginx's cache, and every answer nginx
// makes itself in the endpoint's JSON.

const NOT_FOUND = { success: false, error: { code: 'NOT_FOUND', message: 'Kaynak bulunamadı' } };
const { outside: OUTSIDE, internal: INTERNAL, adminNetwork: ADMIN_NETWORK } = ADDRESSES;
const protocols = PROTOCOLS;

t.test('access through the nginx front', async (t) => {
  const h = await startHarness(t, 'nginx-access', { TRUST_PROXY: '1' });
  // in this copy 127.0.0.2 is internal and 127.0.0.6 an admin network; 127.0.0.1 is outside
  const front = await startNginxFront(t, h.service.port, { geo: `${INTERNAL}/32 internal; ${ADMIN_NETWORK}/32 admin;` });

  /** One request through the HTTPS port, over the given protocol, from `from`. */
  const via = (protocol: Protocol, from: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<RawAnswer> =>
    viaFront(front.tlsPort, protocol, { method, path, headers, body, from });
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  t.test('the admin API and its document: 404 from outside, however the path is spelled', async (t) => {
    const spellings = ['/admin/v1/licenses', '/ADMIN/v1/licenses', '/Admin/v1/licenses/', '//admin/v1/licenses', '/%61dmin/v1/licenses',
      '/admin/v1/licenses?limit=1', '/admin/openapi.json', '/admin/docs', '/admin', '/docs/../admin/v1/licenses'];
    for (const protocol of protocols) {
      for (const path of spellings) {
        const got = await via(protocol, OUTSIDE, 'GET', path, admin);
        t.same([got.status, got.body], [404, NOT_FOUND], `${protocol} ${path} from outside`);
      }
      const create = await via(protocol, OUTSIDE, 'POST', '/admin/v1/licenses', { ...admin, 'content-type': 'application/json' }, '{}');
      t.same([create.status, create.body], [404, NOT_FOUND], `${protocol}: POST from outside, with the admin token`);
    }
    t.equal((await h.admin('GET', '/admin/v1/licenses?limit=1')).status, 200, 'the service itself serves the admin API');
  });

  t.test('the admin API from internal addresses and from an admin network; /metrics from internal ones only', async (t) => {
    for (const protocol of protocols) {
      for (const from of [INTERNAL, ADMIN_NETWORK]) {
        const list = await via(protocol, from, 'GET', '/admin/v1/licenses?limit=1', admin);
        t.equal(list.status, 200, `${protocol} from ${from}: ${list.text.slice(0, 120)}`);
        t.match(list.body, { success: true });
        const anonymous = await via(protocol, from, 'GET', '/admin/v1/licenses');
        t.equal(anonymous.status, 401, `${protocol} from ${from}: still the admin token's check`);
      }
      const metricsInside = await via(protocol, INTERNAL, 'GET', '/metrics');
      t.equal(metricsInside.status, 200, `${protocol}: /metrics from an internal address`);
      for (const from of [ADMIN_NETWORK, OUTSIDE]) {
        const metrics = await via(protocol, from, 'GET', '/metrics');
        t.same([metrics.status, metrics.body], [404, NOT_FOUND], `${protocol}: /metrics from ${from}`);
      }
    }
  });

  t.test('port 80: health checks whatever the Host, everything else to HTTPS, refusals in JSON', async (t) => {
    const probes = [
      'GET /healthz HTTP/1.1\r\nHost: 192.0.2.10\r\nConnection: close\r\n\r\n',
      'GET /readyz HTTP/1.1\r\nHost: some-other-name.example\r\nConnection: close\r\n\r\n',
      'GET /healthz HTTP/1.0\r\n\r\n',
      'GET /HEALTHZ HTTP/1.1\r\nHost: license.example.com\r\nConnection: close\r\n\r\n',
    ];
    for (const probe of probes) {
      const got = await rawExchange(front.httpPort, probe, { answers: 1 });
      t.equal(got.answers[0]?.status, 200, `${JSON.stringify(probe.split('\r\n').slice(0, 2))}: ${got.answers[0]?.text}`);
      t.match(got.answers[0]?.body, { success: true });
    }
    for (const path of ['/api/license/validate', '/metrics', '/admin/v1/licenses', '/healthz/x']) {
      const got = await rawExchange(front.httpPort, `GET ${path} HTTP/1.1\r\nHost: 192.0.2.10\r\nConnection: close\r\n\r\n`, { answers: 1 });
      t.equal(got.answers[0]?.status, 308, `${path} over plain HTTP`);
      t.equal(got.answers[0]?.headers.location, `https://192.0.2.10${path}`);
    }
    const bad = await rawExchange(front.httpPort, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(16_000)}\r\n\r\n`, { answers: 1 });
    t.same([bad.answers[0]?.status, bad.answers[0]?.body], [400, { success: false, error: { code: 'INVALID_REQUEST', message: 'Geçersiz istek parametresi: HTTP' } }],
      'a request nginx refuses on port 80 gets the JSON, not a redirect');
  });

  t.test('the JWKS is served from the front\'s cache; a browser\'s cross-origin request goes through', async (t) => {
    const jwksAnswers = async () => parseMetrics((await h.request('GET', '/metrics')).text)
      .value('license_http_requests_total', { route: '/.well-known/jwks.json' });
    const before = await jwksAnswers();
    const direct = await h.request('GET', '/.well-known/jwks.json');
    for (const protocol of protocols) {
      for (let i = 0; i < 10; i++) {
        const got = await via(protocol, OUTSIDE, 'GET', `/.well-known/jwks.json?n=${i}`);
        t.equal(got.status, 200);
        t.equal(got.text, direct.text, 'the service\'s key set');
      }
    }
    t.equal(await jwksAnswers() - before, 2, 'the service answered the direct request and the one that filled the cache');
    const cors = await via('HTTP/1.1', OUTSIDE, 'GET', '/.well-known/jwks.json', { origin: 'https://app.example.com' });
    t.equal(cors.status, 200);
    t.equal(await jwksAnswers() - before, 3, 'a request with an Origin is the service\'s to answer');
  });

  t.test('HSTS is the service\'s own value', async (t) => {
    for (const protocol of protocols) {
      const got = await via(protocol, OUTSIDE, 'GET', '/healthz');
      t.equal(got.headers['strict-transport-security'], HSTS, protocol);
    }
  });

  t.test('nginx\'s own answers are the endpoint\'s JSON over HTTP/2 too', async (t) => {
    const down = await startNginxFront(t, await freeLoopbackPort());
    const shapes: [string, string, unknown][] = [
      ['POST', '/api/license/validate', { success: false, message: 'Hizmet geçici olarak kullanılamıyor' }],
      ['POST', '/api/v1/auth/get-token', { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Hizmet geçici olarak kullanılamıyor' } }],
    ];
    for (const [method, path, body] of shapes) {
      const got = await http2Exchange(down.tlsPort, { method, path, body: '{}' });
      t.same([got.status, got.body], [503, body], `HTTP/2 ${path}, the service unreachable`);
      t.equal(got.headers['retry-after'], '1');
      t.match(got.headers['content-type'], /^application\/json/);
    }
    const quota = await http2Exchange(down.tlsPort, { path: '/api/License/check-quota/6f1c2a3e-8b7d-4c5e-9f00-1a2b3c4d5e6f' });
    t.match(quota.body, { success: false, error: { code: 'SERVICE_UNAVAILABLE' }, timestamp: /^\d{4}-\d\d-\d\dT/ });
  });

  t.test('the published document asks for no header HTTP/2 forbids', async (t) => {
    const got = await http2Exchange(front.tlsPort, { path: '/openapi.json' });
    t.equal(got.status, 200);
    const doc = got.body as { paths: Record<string, Record<string, unknown>> };
    const found = hopByHopHeaders(doc);
    t.same(found, [], 'no Connection, Keep-Alive or Transfer-Encoding in any response');
    t.ok(Object.keys(doc.paths).length > 10, 'the document was read');
  });
});
