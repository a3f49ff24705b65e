import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import tls from 'node:tls';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';
import { parseJson } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { acceptedTls12Suites, handshake, knownTls12Suites, selfSignedCertificate } from '../helpers/tlsSuites.js';

// HTTPS is mandatory (docs/deployment.md#tls): with TLS_CERT_FILE/TLS_KEY_FILE the service serves HTTPS itself,
// with a Strict-Transport-Security header, and no plain HTTP on that port.

interface HttpsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

function httpsRequest(port: number, method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request({
      host: '127.0.0.1', port, method, path: urlPath, rejectUnauthorized: false, servername: 'localhost',
      headers: { 'content-type': 'application/json', ...(payload ? { 'content-length': Buffer.byteLength(payload) } : {}), ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parseJson(text), text });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** What a plain-HTTP request to the TLS port gets: a status line, or the error that ended it. */
function plainHttpAttempt(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => { socket.destroy(); resolve(`timeout:${received}`); }, 5000);
    socket.on('connect', () => socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    socket.on('data', (c: Buffer) => { received += c.toString('latin1'); });
    const end = (how: string) => { clearTimeout(timer); resolve(`${how}:${received}`); };
    socket.on('error', (err) => end(`error ${err.message}`));
    socket.on('close', () => end('closed'));
  });
}

/** The SHA-256 fingerprint of a PEM certificate file, as node:crypto writes it. */
function fingerprintOf(file: string): string {
  return new X509Certificate(readFileSync(file)).fingerprint256;
}

/** The fingerprint of the certificate a new connection is shown. */
function certificateOf(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.destroy();
      resolve(fingerprint);
    });
    socket.on('error', reject);
  });
}

function openTlsSession(port: number): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false }, () => resolve(socket));
    socket.on('error', reject);
  });
}

/** One keep-alive request on an open TLS connection: its status. */
function requestOn(socket: tls.TLSSocket, urlPath: string): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    let received = '';
    const onData = (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})[^]*?\r\n\r\n/.exec(received);
      if (m) { socket.off('data', onData); resolve({ status: Number(m[1]) }); }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`GET ${urlPath} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
  });
}

t.test('HTTPS with TLS_CERT_FILE / TLS_KEY_FILE', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lic-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { certFile, keyFile } = selfSignedCertificate(dir);

  const h = await startHarness(t, 'tls', { TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile, ALLOW_HTTP: '' }, { logLevel: 'info' });
  t.not(h.config.tls, null, 'the config serves TLS');
  const port = h.service.port;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  t.test('the whole flow over HTTPS, every answer with HSTS', async (t) => {
    const created = await httpsRequest(port, 'POST', '/admin/v1/licenses', {
      organizationName: 'TLS A.Ş.', password: 'tls-password', totalQuota: 3,
      expiryDate: new Date(Date.now() + 86400_000 * 30).toISOString(),
    }, admin);
    t.equal(created.status, 201, created.text);
    const licenseKey: string = created.body.data.licenseKey;

    const quota = await httpsRequest(port, 'GET', `/api/License/check-quota/${licenseKey}`);
    t.equal(quota.status, 200, quota.text);
    t.equal(quota.body?.success, true);
    t.equal(quota.body?.data?.licenseKey, licenseKey);
    t.equal(quota.body?.data?.remainingQuota, 3);
    const hsts = String(quota.headers['strict-transport-security'] ?? '');
    t.match(hsts, /max-age=\d+/, `Strict-Transport-Security: ${hsts}`);
    t.ok(Number(/max-age=(\d+)/.exec(hsts)?.[1] ?? 0) > 0, 'a positive max-age');

    const got = await httpsRequest(port, 'POST', '/api/v1/auth/get-token', { licenseKey, password: 'tls-password', imzaTipi: 0 });
    t.equal(got.status, 200, got.text);
    t.match(String(got.headers['strict-transport-security'] ?? ''), /max-age=\d+/);
    const redeemed = await httpsRequest(port, 'POST', '/api/license/validate', { token: got.body.signToken });
    t.equal(redeemed.status, 200, redeemed.text);
    t.same(redeemed.body, { success: true, message: redeemed.body?.message, usedQuota: 1, remainingQuota: 2 });
    t.match(String(redeemed.headers['strict-transport-security'] ?? ''), /max-age=\d+/);

    for (const [method, p] of [['GET', '/nope'], ['GET', '/api/v1/auth/get-token'], ['GET', `/api/License/check-quota/not-a-uuid`]]) {
      const res = await httpsRequest(port, method as string, p as string);
      t.ok(res.status >= 400, `${method} ${p}: ${res.status}`);
      t.match(String(res.headers['strict-transport-security'] ?? ''), /max-age=\d+/, `${method} ${p}: HSTS on errors too`);
    }
  });

  t.test('TLS 1.2 and 1.3 only, forward-secret AEAD suites only (openssl s_client)', async (t) => {
    const known = knownTls12Suites();
    t.ok(known.includes('AES128-SHA') && known.includes('ECDHE-RSA-AES128-SHA'), `the weak suites are among the ${known.length} tried`);
    const accepted = await acceptedTls12Suites(port, known);
    // an RSA certificate: the ECDSA suites of the list cannot be negotiated with it
    t.same(accepted, ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305'],
      'TLS 1.2: only ECDHE with AES-GCM or ChaCha20-Poly1305 (no static RSA, CBC, SHA-1 or 3DES)');
    t.equal(await handshake(port, ['-tls1', '-cipher', 'ALL:@SECLEVEL=0']), null, 'TLS 1.0 refused');
    t.equal(await handshake(port, ['-tls1_1', '-cipher', 'ALL:@SECLEVEL=0']), null, 'TLS 1.1 refused');
    t.match(await handshake(port, ['-tls1_3']), /^TLS_(AES_(128|256)_GCM_SHA(256|384)|CHACHA20_POLY1305_SHA256)$/, 'TLS 1.3 offered');
  });

  t.test('no plain HTTP on the TLS port', async (t) => {
    const answer = await plainHttpAttempt(port);
    t.notMatch(answer, /HTTP\/1\.[01] 200/, `plain HTTP is not served (${answer.slice(0, 80)})`);
    t.notMatch(answer, /"success":true/);
  });

  t.test('SIGHUP: a renewed certificate for new connections, without a restart; a broken one keeps the old', async (t) => {
    const before = await certificateOf(port);
    t.equal(before, fingerprintOf(certFile), 'the certificate of the files at start');
    const kept = await openTlsSession(port);
    t.teardown(() => kept.destroy());
    const renewedDir = mkdtempSync(path.join(tmpdir(), 'lic-tls-renewed-'));
    t.teardown(() => rmSync(renewedDir, { recursive: true, force: true }));
    const renewed = selfSignedCertificate(renewedDir);
    copyFileSync(renewed.certFile, certFile);
    copyFileSync(renewed.keyFile, keyFile);
    const children = h.deployment?.children() ?? [];
    process.kill(h.deployment?.primary as number, 'SIGHUP');
    // each new connection may land on any process: every one of several shows the new certificate.
    // A connect in the instant a process closes its old listener may be reset by the kernel
    // (docs/deployment.md#without-a-front: net.ipv4.tcp_migrate_req); such a probe counts as not yet renewed
    let resetDuringSwap = 0;
    await waitFor('every process serving the renewed certificate', async () => {
      const seen = await Promise.all(Array.from({ length: 8 }, () => certificateOf(port).catch(() => { resetDuringSwap++; return null; })));
      return seen.every((f) => f === fingerprintOf(renewed.certFile));
    }, 15_000, 100);
    if (resetDuringSwap > 0) t.comment(`${resetDuringSwap} connect(s) reset while a listener was swapped`);
    t.same(h.deployment?.children(), children, 'the same processes: nothing restarted');
    t.equal((await requestOn(kept, '/healthz')).status, 200, 'a connection opened before the reload goes on');
    const quota = await httpsRequest(port, 'GET', '/healthz');
    t.equal(quota.status, 200, 'new connections are served');

    writeFileSync(certFile, 'not a certificate');
    process.kill(h.deployment?.primary as number, 'SIGHUP');
    await waitFor('the refused reload logged', () => h.logs.some((r) => /not reloaded/.test(String(r.msg))), 15_000, 50);
    t.equal(await certificateOf(port), fingerprintOf(renewed.certFile), 'still serving the renewed certificate');
    t.equal((await httpsRequest(port, 'GET', '/healthz')).status, 200);
  });
});
