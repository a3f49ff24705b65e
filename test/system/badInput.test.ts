import { randomUUID } from 'node:crypto';
import net from 'node:net';
import t from 'tap';
import { ADMIN_TOKEN, NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { parseJson, type Answer } from '../helpers/http.js';
import { expectCodedError, expectMessageError } from '../helpers/shapes.js';

// Malformed, oversize and misrouted requests, across the routes (each route's own bad bodies:
// test/routes/<route>.error.test.ts): each endpoint answers in its own published error shape
// (get-token, sign-token, admin: {success:false, error:{code, message}}; validate:
// {success:false, message}), a body over the limit gets 413 even while the client is still
// sending, and the server keeps serving afterwards.

interface RawAnswer {
  head: string;
  status: number;
  body: string;
}

/** A raw answer as the shape assertions take it. */
function answerOfRaw(raw: RawAnswer): Answer {
  const headers = new Headers();
  for (const line of raw.head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return { status: raw.status, headers, body: parseJson(raw.body), text: raw.body };
}

/** The payload of a chunked HTTP/1.1 body. */
function dechunk(raw: string): string {
  let out = '';
  let rest = raw;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    if (eol < 0) return out;
    const size = parseInt(rest.slice(0, eol), 16);
    if (!(size > 0)) return out;
    out += Buffer.from(rest.slice(eol + 2)).subarray(0, size).toString('utf8');
    rest = Buffer.from(rest.slice(eol + 2)).subarray(size + 2).toString('utf8');
  }
}

/**
 * Sends a request head and part of a body on a raw socket, never finishing the body, and
 * resolves with the response the server sends meanwhile.
 */
function partialRequest(port: number, head: string, bodyPart: Buffer, keepSending = false): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let timer: NodeJS.Timeout | null = null;
    let drip: NodeJS.Timeout | null = null;
    const done = (err: Error | null, answer?: RawAnswer): void => {
      if (timer) clearTimeout(timer);
      if (drip) clearInterval(drip);
      socket.destroy();
      if (err) reject(err);
      else resolve(answer as RawAnswer);
    };
    const tryParse = (final: boolean): void => {
      const text = received.toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) {
        if (final) done(new Error(`connection ended without a response head (got ${JSON.stringify(text)})`));
        return;
      }
      const headText = text.slice(0, end);
      let body = text.slice(end + 4);
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(headText);
      if (/\r\ntransfer-encoding:\s*chunked/i.test(headText)) {
        // a 413 sent while the upload goes on is chunked (src/http/linger.ts, lingering close)
        if (!final && !body.includes('0\r\n\r\n')) return;
        body = dechunk(body);
      } else {
        if (!final && length && Buffer.byteLength(body) < Number(length[1])) return;
        if (!final && !length) return;
      }
      done(null, { head: headText, status: Number(headText.split(' ')[1]), body });
    };
    socket.on('connect', () => {
      socket.write(head);
      socket.write(bodyPart);
      if (keepSending) {
        // keep the upload going: the answer must come while the client is still sending
        drip = setInterval(() => {
          if (!socket.destroyed && socket.writable) socket.write(Buffer.alloc(1024, 0x20));
        }, 20);
      }
    });
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk as Buffer]);
      tryParse(false);
    });
    socket.on('error', (err) => {
      if (received.length > 0) tryParse(true);
      else done(err);
    });
    socket.on('end', () => tryParse(true));
    timer = setTimeout(() => done(new Error(`no response within 10 s (got ${JSON.stringify(received.toString())})`)), 10_000);
  });
}

t.test('bad input', async (t) => {
  const h = await startHarness(t, 'badinput', NO_RATE_LIMITS);
  const lic = await h.createLicense({ totalQuota: 100 });
  const first = await h.getToken(lic.licenseKey, lic.password);
  t.equal(first.status, 200, 'a working license to start from');
  const accessToken: string = first.body.accessToken;
  const bearer = { authorization: `Bearer ${accessToken}` };
  const adminAuth = { authorization: `Bearer ${ADMIN_TOKEN}` };

  t.test('invalid UTF-8 bytes as a body', async (t) => {
    const bytes = new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]); // {"\xff\xfe":1}
    const send = (path: string): Promise<Answer> => h.request('POST', path, bytes);
    expectCodedError(t, await send('/api/v1/auth/get-token'), 400, 'INVALID_REQUEST', 'get-token');
    expectMessageError(t, await send('/api/license/validate'), [400], 'validate', 'Token boş olamaz');
  });

  t.test('a 100 KB body: 413 in the endpoint\'s error shape', async (t) => {
    const big = JSON.stringify({ token: 'x'.repeat(100 * 1024), licenseKey: 'y', password: 'z', imzaTipi: 0 });
    expectCodedError(t, await h.request('POST', '/api/v1/auth/get-token', big), 413, null, 'get-token');
    expectCodedError(t, await h.request('POST', '/api/v1/auth/sign-token', big, bearer), 413, null, 'sign-token');
    expectMessageError(t, await h.request('POST', '/api/license/validate', big), [413], 'validate');
    const bigAdmin = JSON.stringify({ organizationName: 'x'.repeat(100 * 1024) });
    expectCodedError(t, await h.request('POST', '/admin/v1/licenses', bigAdmin, adminAuth), 413, null, 'admin create');
  });

  t.test('Content-Length 10 MB, body still arriving: 413 answered while the client sends', async (t) => {
    const { port } = h.service;
    const endpoints: [string, Record<string, string>, 'code' | 'message'][] = [
      ['/api/license/validate', {}, 'message'],
      ['/api/v1/auth/get-token', {}, 'code'],
      ['/api/v1/auth/sign-token', bearer, 'code'],
      ['/admin/v1/licenses', adminAuth, 'code'],
    ];
    for (const [path, headers, shape] of endpoints) {
      const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}Content-Length: 10000000\r\n\r\n`;
      const part = Buffer.from(`{"token":"${'a'.repeat(32 * 1024)}`);
      const res = answerOfRaw(await partialRequest(port, head, part, true));
      t.ok(res.body !== null && typeof res.body === 'object', `${path}: body is a JSON object: ${res.text}`);
      if (shape === 'message') expectMessageError(t, res, [413], path);
      else expectCodedError(t, res, 413, null, path);
    }
  });

  t.test('chunked upload with no length, growing past the limit: 413 while still sending', async (t) => {
    const head = 'POST /api/license/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const chunk = (data: string): Buffer => Buffer.from(`${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`);
    const part = Buffer.concat([chunk(`{"token":"`), ...Array.from({ length: 12 }, () => chunk('b'.repeat(8192)))]);
    expectMessageError(t, answerOfRaw(await partialRequest(h.service.port, head, part)), [413], 'validate, chunked');
  });

  t.test('unknown path: 404 JSON', async (t) => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['GET', '/index.html'],
      ['POST', '/api/v1/auth/get-tokens'],
      ['POST', '/api/v2/auth/get-token'],
      ['GET', '/api/License/check-quota'],
      ['GET', `/api/License/check-quota/${randomUUID()}/extra`],
      ['POST', '/admin/v1/licenses/x/y/z'],
    ]) {
      const res = await h.request(method as string, path as string, method === 'POST' ? {} : undefined);
      t.equal(res.status, 404, `${method} ${path}`);
      t.match(res.headers.get('content-type') ?? '', /^application\/json/);
      t.equal(res.body?.success, false, `${method} ${path}: JSON body`);
    }
  });

  t.test('wrong method: 405 JSON with an Allow header', async (t) => {
    const key = randomUUID();
    const cases: [string, string, RegExp, 'code' | 'message'][] = [
      // public paths answer OPTIONS too (CORS preflights)
      ['GET', '/api/v1/auth/get-token', /^POST, OPTIONS$/, 'code'],
      ['PUT', '/api/v1/auth/get-token', /^POST, OPTIONS$/, 'code'],
      ['GET', '/api/v1/auth/sign-token', /^POST, OPTIONS$/, 'code'],
      ['GET', '/api/license/validate', /^POST, OPTIONS$/, 'message'],
      ['DELETE', '/api/License/validate', /^POST, OPTIONS$/, 'message'],
      ['POST', `/api/License/check-quota/${key}`, /^GET, OPTIONS$/, 'code'],
      ['DELETE', `/admin/v1/licenses/${key}`, /^(GET, PATCH|PATCH, GET)$/, 'code'],
      ['DELETE', '/admin/v1/licenses', /^(POST, GET|GET, POST)$/, 'code'],
      ['POST', `/admin/v1/licenses/${key}/tokens`, /^GET$/, 'code'],
    ];
    for (const [method, path, allow, shape] of cases) {
      const res = await h.request(method, path, method === 'GET' ? undefined : {}, path.startsWith('/admin') ? adminAuth : {});
      t.equal(res.status, 405, `${method} ${path}`);
      t.match(res.headers.get('allow') ?? '', allow, `${method} ${path}: Allow ${res.headers.get('allow')}`);
      t.match(res.headers.get('content-type') ?? '', /^application\/json/);
      t.equal(res.body?.success, false);
      if (shape === 'message') t.type(res.body?.message, 'string', `${method} ${path}: {success, message}`);
      else t.type(res.body?.error?.code, 'string', `${method} ${path}: {success, error}`);
    }
  });

  t.test('invalid percent-encoding in a path parameter', async (t) => {
    for (const bad of ['%E0%A4%A', '%ZZ', '%', `${lic.licenseKey}%`, '%C0%AF']) {
      const quota = await h.request('GET', `/api/License/check-quota/${bad}`);
      t.equal(quota.status, 400, `check-quota ${bad}`);
      t.equal(quota.body?.error?.code, 'INVALID_LICENSE_KEY', `check-quota ${bad}`);
      t.type(quota.body?.timestamp, 'string');
      const admin = await h.request('GET', `/admin/v1/licenses/${bad}`, undefined, adminAuth);
      t.equal(admin.status, 404, `admin ${bad}`);
      t.equal(admin.body?.error?.code, 'LICENSE_NOT_FOUND', `admin ${bad}`);
      const history = await h.request('GET', `/api/License/history/${bad}`, undefined, bearer);
      t.ok(history.status >= 400 && history.status < 500, `history ${bad}: 4xx (${history.status})`);
      t.equal(history.body?.success, false, `history ${bad}: JSON`);
    }
  });

  t.test('the server still serves after all of that', async (t) => {
    const got = await h.getToken(lic.licenseKey, lic.password, 1);
    t.equal(got.status, 200);
    const more = await h.signToken(got.body.accessToken, 0);
    t.equal(more.status, 200);
    for (const token of [got.body.signToken, more.body.signToken]) {
      const v = await h.validate(token);
      t.equal(v.status, 200);
      t.equal(v.body?.success, true);
    }
    const quota = await h.checkQuota(lic.licenseKey);
    t.equal(quota.status, 200);
    t.equal(quota.body?.data?.usedQuota, 2, 'no bad request spent quota');
    t.equal(quota.body?.data?.totalQuota, 100);
    const [count] = await h.sql`select count(*)::int as n from licenses`;
    t.equal(count?.n, 1, 'no bad admin request created a license');
  });
});
