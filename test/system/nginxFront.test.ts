import http2 from 'node:http2';
import t from 'tap';
import { startHarness, type TestLicense } from '../helpers/harness.js';
import { startNginxFront } from '../helpers/nginxFront.js';
import { freeLoopbackPort } from '../helpers/processes.js';
import { establishedTo } from '../helpers/sockets.js';
import { rawExchange, rawRequest, type RawAnswer } from '../helpers/rawHttp.js';
import { acceptedTls12Suites, handshake } from '../helpers/tlsSuites.js';

// The production front of deploy/nginx, with the real nginx, in front of the service as
// `npm start` runs it behind a proxy (TRUST_PROXY=1, every limit at its default). Each
// point is what an operator would try: ordinary clients and health checks, requests framed
// two ways, pipelining, TLS, the client's address, /metrics, the bounds, the service down.

const VALIDATE_SHAPE_400 = { success: false, message: 'Geçersiz istek parametresi: HTTP' };

t.test('the nginx front of deploy/', async (t) => {
  const h = await startHarness(t, 'nginx-front', { TRUST_PROXY: '1' });
  // in this copy only 127.0.0.2 is internal: the tests' usual 127.0.0.1 plays the public client
  const front = await startNginxFront(t, h.service.port, { geo: '127.0.0.2/32 internal;' });

  /** One request through the front's HTTPS port, from `from` (default 127.0.0.1). */
  async function viaFront(request: string, from?: string): Promise<RawAnswer> {
    const got = await rawExchange(front.tlsPort, request, { tls: true, localAddress: from, answers: 1 });
    const answer = got.answers[0];
    if (answer === undefined) throw new Error(`no answer through the front to ${request.split('\r\n')[0]}`);
    return answer;
  }
  async function signTokenOf(lic: TestLicense): Promise<string> {
    const got = await h.getToken(lic.licenseKey, lic.password);
    if (got.status !== 200) throw new Error(`get-token: ${got.status} ${got.text}`);
    return got.body.signToken as string;
  }
  async function remaining(lic: TestLicense): Promise<number> {
    const rows = await h.sql`select total_quota - used_quota as left from licenses where license_key = ${lic.licenseKey}`;
    return Number(rows[0]?.left);
  }

  t.test('HTTP/1.0 clients and HTTP/1.0 health checks are answered', async (t) => {
    for (const [port, tls, label] of [[front.tlsPort, true, 'HTTPS'], [front.httpPort, false, 'plain HTTP']] as const) {
      for (const path of ['/healthz', '/readyz']) {
        const got = await rawExchange(port, `GET ${path} HTTP/1.0\r\n\r\n`, { tls });
        t.equal(got.answers.length, 1, `${label} ${path}: one answer`);
        t.equal(got.answers[0]?.status, 200, `${label} ${path}: ${got.answers[0]?.text}`);
        t.match(got.answers[0]?.body, { success: true, redis: 'ok', postgres: 'ok' });
        t.ok(got.closed, `${label} ${path}: closed after the answer, as HTTP/1.0 asks`);
      }
    }
    const lic = await h.createLicense({ totalQuota: 3 });
    const login = await viaFront(rawRequest('POST', '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 }, {}, 'HTTP/1.0'));
    t.equal(login.status, 200, `get-token over HTTP/1.0: ${login.text}`);
    const redeemed = await viaFront(rawRequest('POST', '/api/license/validate', { token: (login.body as { signToken: string }).signToken }, {}, 'HTTP/1.0'));
    t.equal(redeemed.status, 200, redeemed.text);
    t.match(redeemed.body, { success: true, usedQuota: 1, remainingQuota: 2 });

    // HTTP/1.1 to the service, kept open: twenty clients, each on a connection of its own, one upstream connection
    const upstream = new Set<number>();
    for (let i = 0; i < 20; i++) {
      const got = await rawExchange(front.tlsPort, 'GET /healthz HTTP/1.0\r\n\r\n', { tls: true });
      t.equal(got.answers[0]?.status, 200);
      for (const port of await establishedTo(h.service.port)) upstream.add(port);
    }
    t.ok(upstream.size >= 1 && upstream.size <= 2, `the front reused its connections to the service (${upstream.size} for 20 clients)`);

    // why the front: the service alone does not speak HTTP/1.0 (docs/deployment.md#without-a-front)
    const direct = await rawExchange(h.service.port, 'GET /healthz HTTP/1.0\r\n\r\n', { timeoutMs: 1500 });
    t.equal(direct.answers.length, 0, 'without the front, an HTTP/1.0 request gets no answer');
  });

  t.test('a request framed two ways is refused, and nothing smuggled behind it is redeemed', async (t) => {
    const lic = await h.createLicense({ totalQuota: 5 });
    const token = await signTokenOf(lic);
    const body = JSON.stringify({ token });
    const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const smuggled = rawRequest('POST', '/api/license/validate', { token });
    const head = 'POST /api/license/validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n';
    const variants: Record<string, string> = {
      'two Content-Length, different': `${head}Content-Length: ${body.length}\r\nContent-Length: 2\r\n\r\n${body}${smuggled}`,
      'two Content-Length, the same': `${head}Content-Length: ${body.length}\r\nContent-Length: ${body.length}\r\n\r\n${body}${smuggled}`,
      'Content-Length and chunked': `${head}Content-Length: ${chunked.length}\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}${smuggled}`,
      'chunked, identity': `${head}Transfer-Encoding: chunked, identity\r\n\r\n${chunked}${smuggled}`,
      'identity': `${head}Transfer-Encoding: identity\r\nContent-Length: ${body.length}\r\n\r\n${body}${smuggled}`,
      'gzip, chunked': `${head}Transfer-Encoding: gzip, chunked\r\n\r\n${chunked}${smuggled}`,
      'two Transfer-Encoding lines': `${head}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}${smuggled}`,
      'chunked in HTTP/1.0': `${head.replace('HTTP/1.1', 'HTTP/1.0')}Transfer-Encoding: chunked\r\n\r\n${chunked}${smuggled}`,
    };
    for (const [label, request] of Object.entries(variants)) {
      const got = await rawExchange(front.tlsPort, request, { tls: true });
      t.equal(got.answers.length, 1, `${label}: one answer, the smuggled request never read (${got.answers.map((a) => a.status).join(',')})`);
      t.ok([400, 501].includes(got.answers[0]?.status ?? 0), `${label}: ${got.answers[0]?.status}`);
      t.same(got.answers[0]?.body, VALIDATE_SHAPE_400, `${label}: validate's published error shape`);
      t.ok(got.closed, `${label}: the connection is closed`);
    }
    t.equal(await remaining(lic), 5, 'no unit spent');
    const first = await viaFront(rawRequest('POST', '/api/license/validate', { token }));
    t.match(first.body, { success: true, usedQuota: 1 }, 'the token was never redeemed: it redeems now, once');

    // chunk lines ending in a bare LF: nginx alone reads them, and sends the service a Content-Length
    const other = JSON.stringify({ token: await signTokenOf(lic) });
    const bareLf = await rawExchange(front.tlsPort,
      `${head}Transfer-Encoding: chunked\r\n\r\n${other.length.toString(16)}\n${other}\n0\n\n`, { tls: true, answers: 1 });
    t.match(bareLf.answers[0]?.body, { success: true, usedQuota: 2 }, 'read once, as nginx framed it');
    await h.drainWorker();
    t.equal(await remaining(lic), 3, 'two units spent in all, in Postgres');
  });

  t.test('pipelined requests, the slow ones among them, are answered in order', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const [a, b] = [await signTokenOf(lic), await signTokenOf(lic)];
    const requests = [
      rawRequest('POST', '/api/license/validate', { token: a }),
      rawRequest('GET', `/api/License/check-quota/${lic.licenseKey}`),
      rawRequest('POST', '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 1 }),
      rawRequest('POST', '/api/license/validate', { token: b }),
      rawRequest('GET', '/healthz', undefined, { Connection: 'close' }),
    ];
    const got = await rawExchange(front.tlsPort, requests.join(''), { tls: true, timeoutMs: 15_000 });
    t.same(got.answers.map((x) => x.status), [200, 200, 200, 200, 200], got.answers.map((x) => x.text).join('\n'));
    t.match(got.answers[0]?.body, { success: true, usedQuota: 1 });
    t.match(got.answers[1]?.body, { success: true, data: { licenseKey: lic.licenseKey } });
    t.match(got.answers[2]?.body, { success: true, signToken: String });
    t.match(got.answers[3]?.body, { success: true, usedQuota: 2 });
    t.match(got.answers[4]?.body, { success: true, redis: 'ok' });
    await h.drainWorker();
    t.equal(await remaining(lic), 8, 'each redemption answered and spent once');
  });

  t.test('TLS: 1.2 with forward-secret AEAD suites in the server\'s order, and 1.3', async (t) => {
    t.same(await acceptedTls12Suites(front.tlsPort), ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305'],
      'TLS 1.2: only ECDHE with AES-GCM or ChaCha20-Poly1305 (an RSA certificate: no ECDSA suites)');
    t.equal(await handshake(front.tlsPort, ['-tls1_2', '-cipher', 'ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256']),
      'ECDHE-RSA-AES128-GCM-SHA256', 'the server\'s order decides, not the client\'s');
    t.equal(await handshake(front.tlsPort, ['-tls1', '-cipher', 'ALL:@SECLEVEL=0']), null, 'TLS 1.0 refused');
    t.equal(await handshake(front.tlsPort, ['-tls1_1', '-cipher', 'ALL:@SECLEVEL=0']), null, 'TLS 1.1 refused');
    t.match(await handshake(front.tlsPort, ['-tls1_3']), /^TLS_/, 'TLS 1.3 offered');
    const health = await viaFront('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    t.match(health.headers['strict-transport-security'], /max-age=\d+/, 'HSTS');

    const session = http2.connect(`https://127.0.0.1:${front.tlsPort}`, { rejectUnauthorized: false, servername: 'localhost' });
    t.teardown(() => session.close());
    const status = await new Promise<number>((resolve, reject) => {
      const req = session.request({ ':path': '/healthz' });
      req.on('response', (headers) => resolve(Number(headers[':status'])));
      req.on('error', reject);
      req.resume();
    });
    t.equal(status, 200, 'HTTP/2 clients too');
  });

  t.test('the client\'s address, not a header it sent, reaches the per-address limit and the trusted addresses', async (t) => {
    const lic = await h.createLicense();
    const forged = { 'X-Forwarded-For': '203.0.113.9' };
    const statuses: number[] = [];
    for (let i = 0; i < h.config.rate.checkQuota + 1; i++) {
      statuses.push((await viaFront(rawRequest('GET', `/api/License/check-quota/${lic.licenseKey}`, undefined, forged), '127.0.0.3')).status);
    }
    t.same(statuses, [...Array(h.config.rate.checkQuota).fill(200), 429], '127.0.0.3 spends its own budget');
    const other = await viaFront(rawRequest('GET', `/api/License/check-quota/${lic.licenseKey}`, undefined, forged), '127.0.0.4');
    t.equal(other.status, 200, 'another address, sending the same forged header, has its own');

    const login = await viaFront(rawRequest('POST', '/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 },
      { 'X-Forwarded-For': '198.51.100.7' }), '127.0.0.5');
    t.equal(login.status, 200, login.text);
    const trusted = await h.redis.zrange(h.keys.trustedAddresses(lic.licenseKey), "0", "-1");
    t.same(trusted, ['127.0.0.5'], 'the address that logged in is the one remembered');
  });

  t.test('/metrics answers internal addresses only, however the path is spelled', async (t) => {
    for (const path of ['/metrics', '/METRICS', '/Metrics/', '//metrics', '/%6detrics', '/metrics?name=x']) {
      const got = await viaFront(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 127.0.0.2\r\n\r\n`);
      t.equal(got.status, 404, `${path} from outside: ${got.status}`);
      t.same(got.body, { success: false, error: { code: 'NOT_FOUND', message: 'Kaynak bulunamadı' } });
    }
    const inside = await viaFront('GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n', '127.0.0.2');
    t.equal(inside.status, 200);
    t.match(inside.text, /^# (HELP|TYPE) /m, 'Prometheus text');
  });

  t.test('bodies, headers and URIs past the bounds get the endpoint\'s published shape', async (t) => {
    const tooLarge = { success: false, message: 'İstek gövdesi çok büyük' };
    const service413 = await viaFront(rawRequest('POST', '/api/license/validate', `{"token":"${'a'.repeat(20_000)}"}`));
    t.same([service413.status, service413.body], [413, tooLarge], 'above BODY_LIMIT_BYTES: the service\'s 413');
    const front413 = await viaFront(rawRequest('POST', '/api/license/validate', `{"token":"${'a'.repeat(200_000)}"}`));
    t.same([front413.status, front413.body], [413, tooLarge], 'above the front\'s ceiling: the same 413 from nginx');
    const coded413 = await viaFront(rawRequest('POST', '/api/v1/auth/get-token', `{"licenseKey":"${'a'.repeat(200_000)}"}`));
    t.same([coded413.status, coded413.body], [413, { success: false, error: { code: 'PAYLOAD_TOO_LARGE', message: 'İstek gövdesi çok büyük' } }]);

    // the same over HTTP/2, as browsers speak it: nginx's own 413 is the endpoint's JSON too
    const session = http2.connect(`https://127.0.0.1:${front.tlsPort}`, { rejectUnauthorized: false, servername: 'localhost' });
    t.teardown(() => session.close());
    const h2 = (path: string, body: string) => new Promise<[number, unknown]>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      let status = 0;
      let text = '';
      req.on('response', (headers) => { status = Number(headers[':status']); });
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => { text += chunk; });
      req.on('end', () => resolve([status, text.startsWith('{') ? JSON.parse(text) : text.slice(0, 60)]));
      req.on('error', reject);
      req.end(body);
    });
    t.same(await h2('/api/license/validate', `{"token":"${'a'.repeat(200_000)}"}`), [413, tooLarge], 'HTTP/2: validate, above the front\'s ceiling');
    t.same(await h2('/api/v1/auth/get-token', `{"licenseKey":"${'a'.repeat(200_000)}"}`),
      [413, { success: false, error: { code: 'PAYLOAD_TOO_LARGE', message: 'İstek gövdesi çok büyük' } }], 'HTTP/2: get-token, the coded shape');
    t.same(await h2('/api/license/validate', `{"token":"${'a'.repeat(20_000)}"}`), [413, tooLarge], 'HTTP/2: the service\'s own 413');

    const header = await viaFront(`GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Pad: ${'a'.repeat(16_000)}\r\n\r\n`);
    t.equal(header.status, 400, 'a header line past 8 KiB');
    t.same(header.body, { success: false, error: { code: 'INVALID_REQUEST', message: 'Geçersiz istek parametresi: HTTP' } });
    const uri = await viaFront(`GET /api/License/check-quota/${'a'.repeat(10_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    t.equal(uri.status, 414, 'a URI past 8 KiB');
    t.same(uri.body, { success: false, error: { code: 'INVALID_REQUEST', message: 'Geçersiz istek parametresi: HTTP' } });
  });

  t.test('with the service unreachable, a 503 in the endpoint\'s shape and a Retry-After', async (t) => {
    const down = await startNginxFront(t, await freeLoopbackPort());
    const answer = async (request: string) => (await rawExchange(down.tlsPort, request, { tls: true, answers: 1 })).answers[0];
    const validate = await answer(rawRequest('POST', '/api/license/validate', { token: 'x' }));
    t.same([validate?.status, validate?.body], [503, { success: false, message: 'Hizmet geçici olarak kullanılamıyor' }]);
    t.equal(validate?.headers['retry-after'], '1');
    const quota = await answer(rawRequest('GET', '/api/License/check-quota/6f1c2a3e-8b7d-4c5e-9f00-1a2b3c4d5e6f'));
    t.match(quota?.body, { success: false, error: { code: 'SERVICE_UNAVAILABLE' }, timestamp: /^\d{4}-\d\d-\d\dT/ });
    const login = await answer(rawRequest('POST', '/api/v1/auth/get-token', {}));
    t.same(login?.body, { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Hizmet geçici olarak kullanılamıyor' } });
  });
});
