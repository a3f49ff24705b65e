import { randomUUID } from 'node:crypto';
import net from 'node:net';
import t from 'tap';
import { ADMIN_TOKEN, startHarness, type Answer } from '../helpers/harness.js';

// Malformed, oversize and misrouted requests: each endpoint answers in its own published error
// shape (get-token, sign-token, admin: {success:false, error:{code, message}}; validate:
// {success:false, message}), a body over the limit gets 413 even while the client is still
// sending, and the server keeps serving afterwards.

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

/** {success:false, error:{code, message}} and nothing else. */
function assertCodeShape(t: TestT, res: Answer, status: number, code: string | null, what: string): void {
  t.equal(res.status, status, `${what}: status ${status} (${res.text})`);
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON`);
  t.same(Object.keys(res.body ?? {}).sort(), ['error', 'success'], `${what}: {success, error}`);
  t.equal(res.body?.success, false, `${what}: success false`);
  t.same(Object.keys(res.body?.error ?? {}).sort(), ['code', 'message'], `${what}: error {code, message}`);
  if (code !== null) t.equal(res.body?.error?.code, code, `${what}: code ${code}`);
  else t.match(res.body?.error?.code, /^[A-Z_]+$/, `${what}: a code`);
  t.ok(typeof res.body?.error?.message === 'string' && res.body.error.message.length > 0, `${what}: a message`);
}

/** {success:false, message} and nothing else. */
function assertMessageShape(t: TestT, res: Answer, statuses: number[], what: string, message?: string): void {
  t.ok(statuses.includes(res.status), `${what}: status ${res.status} in ${statuses.join('/')} (${res.text})`);
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON`);
  t.same(Object.keys(res.body ?? {}).sort(), ['message', 'success'], `${what}: {success, message}`);
  t.equal(res.body?.success, false, `${what}: success false`);
  t.ok(typeof res.body?.message === 'string' && res.body.message.length > 0, `${what}: a message`);
  if (message !== undefined) t.equal(res.body?.message, message, `${what}: "${message}"`);
}

/** Raw bodies that are not a JSON object. */
const NOT_AN_OBJECT: [string, string][] = [
  ['empty body', ''],
  ['non-JSON', '{"licenseKey": '],
  ['plain text', 'hello'],
  ['JSON array', '[]'],
  ['JSON array of an object', '[{"token":"x"}]'],
  ['JSON string', '"token"'],
  ['JSON number', '42'],
  ['JSON null', 'null'],
  ['JSON true', 'true'],
];

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

interface RawAnswer {
  head: string;
  status: number;
  body: string;
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
        // a 413 sent while the upload goes on is chunked (src/http/server.ts, lingering close)
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
  const h = await startHarness(t, 'badinput', {
    RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0', RATE_VALIDATE_PER_MIN: '0', RATE_CHECK_QUOTA_PER_MIN: '0',
  });
  const lic = await h.createLicense({ totalQuota: 100 });
  const first = await h.getToken(lic.licenseKey, lic.password);
  t.equal(first.status, 200, 'a working license to start from');
  const accessToken: string = first.body.accessToken;
  const bearer = { authorization: `Bearer ${accessToken}` };
  const adminAuth = { authorization: `Bearer ${ADMIN_TOKEN}` };

  t.test('get-token: bodies that are not a JSON object, wrong types, missing fields', async (t) => {
    for (const [what, body] of NOT_AN_OBJECT) {
      assertCodeShape(t, await h.request('POST', '/api/v1/auth/get-token', body), 400, 'INVALID_REQUEST', what);
    }
    const good = { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 };
    const cases: [string, Record<string, unknown>][] = [
      ['licenseKey missing', { password: good.password, imzaTipi: 0 }],
      ['password missing', { licenseKey: good.licenseKey, imzaTipi: 0 }],
      ['imzaTipi missing', { licenseKey: good.licenseKey, password: good.password }],
      ['empty object', {}],
      ['licenseKey a number', { ...good, licenseKey: 12345 }],
      ['licenseKey null', { ...good, licenseKey: null }],
      ['licenseKey an object', { ...good, licenseKey: { $ne: '' } }],
      ['password a number', { ...good, password: 1234 }],
      ['password an array', { ...good, password: [good.password] }],
      ['imzaTipi a string', { ...good, imzaTipi: '0' }],
      ['imzaTipi 2', { ...good, imzaTipi: 2 }],
      ['imzaTipi -1', { ...good, imzaTipi: -1 }],
      ['imzaTipi 0.5', { ...good, imzaTipi: 0.5 }],
      ['imzaTipi true', { ...good, imzaTipi: true }],
      ['imzaTipi null', { ...good, imzaTipi: null }],
    ];
    for (const [what, body] of cases) {
      assertCodeShape(t, await h.request('POST', '/api/v1/auth/get-token', body), 400, 'INVALID_REQUEST', what);
    }
  });

  t.test('sign-token: bodies that are not a JSON object, wrong types, missing fields', async (t) => {
    for (const [what, body] of NOT_AN_OBJECT) {
      assertCodeShape(t, await h.request('POST', '/api/v1/auth/sign-token', body, bearer), 400, 'INVALID_REQUEST', what);
    }
    const cases: [string, Record<string, unknown>][] = [
      ['imzaTipi missing', {}],
      ['imzaTipi a string', { imzaTipi: '1' }],
      ['imzaTipi 2', { imzaTipi: 2 }],
      ['imzaTipi 1.0000001', { imzaTipi: 1.0000001 }],
      ['imzaTipi null', { imzaTipi: null }],
      ['imzaTipi an array', { imzaTipi: [0] }],
    ];
    for (const [what, body] of cases) {
      assertCodeShape(t, await h.request('POST', '/api/v1/auth/sign-token', body, bearer), 400, 'INVALID_REQUEST', what);
    }
  });

  t.test('validate: bodies that are not a JSON object, wrong types, missing token', async (t) => {
    for (const [what, body] of NOT_AN_OBJECT) {
      assertMessageShape(t, await h.request('POST', '/api/license/validate', body), [400], what);
    }
    for (const [what, body] of [
      ['token missing', {}],
      ['token null', { token: null }],
      ['token empty', { token: '' }],
      ['only origin', { origin: 'https://a.example' }],
    ] as [string, Record<string, unknown>][]) {
      assertMessageShape(t, await h.request('POST', '/api/license/validate', body), [400], what, 'Token boş olamaz');
    }
    for (const [what, body] of [
      ['token a number', { token: 42 }],
      ['token an object', { token: { jwt: 'x' } }],
      ['token an array', { token: ['a.b.c'] }],
      ['token true', { token: true }],
      ['origin a number', { token: 'a.b.c', origin: 7 }],
    ] as [string, Record<string, unknown>][]) {
      assertMessageShape(t, await h.request('POST', '/api/license/validate', body), [400, 401], what);
    }
  });

  t.test('admin create: bodies that are not a JSON object, wrong types', async (t) => {
    for (const [what, body] of NOT_AN_OBJECT) {
      assertCodeShape(t, await h.request('POST', '/admin/v1/licenses', body, adminAuth), 400, 'INVALID_REQUEST', what);
    }
    const good = { organizationName: 'X', password: 'p', totalQuota: 1, expiryDate: new Date(Date.now() + 86400_000).toISOString() };
    for (const [what, body] of [
      ['totalQuota a string', { ...good, totalQuota: '1' }],
      ['organizationName an object', { ...good, organizationName: { tr: 'X' } }],
      ['isActive a number', { ...good, isActive: 1 }],
      ['domains a string', { ...good, domains: 'a.com' }],
      ['empty object', {}],
    ] as [string, Record<string, unknown>][]) {
      assertCodeShape(t, await h.request('POST', '/admin/v1/licenses', body, adminAuth), 400, 'INVALID_REQUEST', what);
    }
  });

  t.test('invalid UTF-8 bytes as a body', async (t) => {
    const bytes = new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]); // {"\xff\xfe":1}
    const send = async (path: string, headers: Record<string, string> = {}): Promise<Answer> => {
      const res = await fetch(h.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: bytes });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: parseJson(text), text };
    };
    assertCodeShape(t, await send('/api/v1/auth/get-token'), 400, 'INVALID_REQUEST', 'get-token');
    assertMessageShape(t, await send('/api/license/validate'), [400], 'validate', 'Token boş olamaz');
  });

  t.test('a 100 KB body: 413 in the endpoint\'s error shape', async (t) => {
    const big = JSON.stringify({ token: 'x'.repeat(100 * 1024), licenseKey: 'y', password: 'z', imzaTipi: 0 });
    assertCodeShape(t, await h.request('POST', '/api/v1/auth/get-token', big), 413, null, 'get-token');
    assertCodeShape(t, await h.request('POST', '/api/v1/auth/sign-token', big, bearer), 413, null, 'sign-token');
    assertMessageShape(t, await h.request('POST', '/api/license/validate', big), [413], 'validate');
    const bigAdmin = JSON.stringify({ organizationName: 'x'.repeat(100 * 1024) });
    assertCodeShape(t, await h.request('POST', '/admin/v1/licenses', bigAdmin, adminAuth), 413, null, 'admin create');
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
      const res = await partialRequest(port, head, part, true);
      t.equal(res.status, 413, `${path}: HTTP 413 (${res.head.split('\r\n')[0]})`);
      t.match(res.head, /content-type:\s*application\/json/i, `${path}: JSON`);
      const parsed = parseJson(res.body) as (Record<string, unknown> & { error?: Record<string, unknown> }) | null;
      t.ok(parsed !== null && typeof parsed === 'object', `${path}: body is a JSON object: ${res.body}`);
      const body = parsed ?? {};
      t.equal(body.success, false, `${path}: success false`);
      if (shape === 'message') {
        t.same(Object.keys(body).sort(), ['message', 'success'], `${path}: {success, message}`);
        t.type(body.message, 'string');
      } else {
        t.same(Object.keys(body).sort(), ['error', 'success'], `${path}: {success, error}`);
        t.type(body.error?.code, 'string');
        t.type(body.error?.message, 'string');
      }
    }
  });

  t.test('chunked upload with no length, growing past the limit: 413 while still sending', async (t) => {
    const head = 'POST /api/license/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const chunk = (data: string): Buffer => Buffer.from(`${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`);
    const part = Buffer.concat([chunk(`{"token":"`), ...Array.from({ length: 12 }, () => chunk('b'.repeat(8192)))]);
    const res = await partialRequest(h.service.port, head, part);
    t.equal(res.status, 413, `status line: ${res.head.split('\r\n')[0]}`);
    const body = parseJson(res.body) as Record<string, unknown> | null;
    t.same(Object.keys(body ?? {}).sort(), ['message', 'success'], `{success, message}: ${res.body}`);
    t.equal(body?.success, false);
  });

  t.test('unknown path: 404 JSON', async (t) => {
    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/nope'],
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
      ['GET', '/api/v1/auth/get-token', /^POST$/, 'code'],
      ['PUT', '/api/v1/auth/get-token', /^POST$/, 'code'],
      ['GET', '/api/v1/auth/sign-token', /^POST$/, 'code'],
      ['GET', '/api/license/validate', /^POST$/, 'message'],
      ['DELETE', '/api/License/validate', /^POST$/, 'message'],
      ['POST', `/api/License/check-quota/${key}`, /^GET$/, 'code'],
      ['DELETE', `/admin/v1/licenses/${key}`, /^(GET, PATCH|PATCH, GET)$/, 'code'],
      ['GET', '/admin/v1/licenses', /^POST$/, 'code'],
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
