import http from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';

// The documentation as browsers and caches fetch it, over real HTTP from the service as
// deployed (startHarness: the processes `npm start` runs): each document, page and file
// compressed with br or gzip as the request's Accept-Encoding chooses (q-values honoured),
// decoding to the very bytes sent uncompressed, never compressed without the header; every
// answer with Vary: Accept-Encoding and an ETag of its coding, If-None-Match with it
// answered 304 without a body (on a connection that then serves on); and every process
// serving the same bytes, so an ETag one gave is current at another.

const h = await startHarness(t, 'docs-caching');

interface Fetched {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One GET with these headers, the body as bytes, not decoded; on `agent`'s connection, else a new one. */
function get(path: string, headers: Record<string, string> = {}, agent: http.Agent | false = false): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    http.get(`${h.url}${path}`, { headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

const DECODE: Record<string, (b: Buffer) => Buffer> = { gzip: gunzipSync, br: brotliDecompressSync };
const FILES = ['/openapi.json', '/docs', '/docs/interactive', '/docs/swagger-ui-bundle.js', '/docs/reference.css', '/admin/openapi.json', '/admin/docs', '/admin/docs/interactive'];

// first: a coding is compressed when first asked for, so these requests meet it uncompressed
t.test('the first requests for a coding, many at once while it is compressed: the same bytes each, the file decoded', async (t) => {
  const path = '/docs/swagger-ui-bundle.js';
  const plain = await get(path);
  for (const coding of ['br', 'gzip']) {
    const all = await Promise.all(Array.from({ length: 24 }, () => get(path, { 'accept-encoding': coding })));
    const first = all[0] as Fetched;
    t.equal(first.headers['content-encoding'], coding, `${coding}: compressed`);
    t.ok(DECODE[coding]!(first.body).equals(plain.body), `${coding}: decodes to the file`);
    t.ok(all.every((r) => r.status === 200 && r.body.equals(first.body) && r.headers.etag === first.headers.etag), `${coding}: 24 answers, one body, one ETag`);
  }
});

t.test('without Accept-Encoding nothing is compressed; br and gzip decode to the same bytes', async (t) => {
  for (const path of FILES) {
    const plain = await get(path);
    t.equal(plain.status, 200, `${path}: 200`);
    t.equal(plain.headers['content-encoding'], undefined, `${path}: not compressed without Accept-Encoding`);
    t.equal(plain.headers.vary, 'Accept-Encoding', `${path}: Vary: Accept-Encoding`);
    t.match(plain.headers.etag, /^"[A-Za-z0-9_-]+"$/, `${path}: an ETag`);
    t.equal(Number(plain.headers['content-length']), plain.body.byteLength, `${path}: its length`);
    for (const coding of ['gzip', 'br']) {
      const packed = await get(path, { 'accept-encoding': coding });
      t.equal(packed.headers['content-encoding'], coding, `${path}: ${coding} when asked`);
      t.equal(packed.headers.vary, 'Accept-Encoding');
      t.equal(packed.headers['content-type'], plain.headers['content-type'], `${path} ${coding}: the same Content-Type`);
      t.ok(packed.body.byteLength < plain.body.byteLength, `${path} ${coding}: smaller (${packed.body.byteLength} < ${plain.body.byteLength} bytes)`);
      t.ok(DECODE[coding]!(packed.body).equals(plain.body), `${path} ${coding}: decodes to the uncompressed bytes`);
      t.not(packed.headers.etag, plain.headers.etag, `${path} ${coding}: an ETag of its own (other bytes)`);
    }
  }
  const bundle = (coding: string) => get('/docs/swagger-ui-bundle.js', { 'accept-encoding': coding }).then((r) => r.body.byteLength);
  t.ok(await bundle('br') < await bundle('gzip'), 'Swagger UI\'s script: br smaller than gzip');
  const icon = await get('/docs/favicon-32x32.png', { 'accept-encoding': 'br, gzip' });
  t.equal(icon.headers['content-encoding'], undefined, 'a PNG, which would not get smaller, is sent as it is');
  t.equal(icon.headers.vary, 'Accept-Encoding');
});

t.test('Accept-Encoding chooses by q-value; br on a tie', async (t) => {
  const cases: [accept: string, coding: string | undefined][] = [
    ['gzip, deflate, br', 'br'], ['gzip, deflate', 'gzip'], ['BR', 'br'], ['x-gzip', 'gzip'], ['br;q=0.5, gzip', 'gzip'],
    ['gzip;q=0.8, br;q=0.9', 'br'], ['gzip;q=0, br;q=0', undefined], ['identity', undefined], ['deflate', undefined], ['*', 'br'],
    ['br;q=0, *', 'gzip'], ['*;q=0, gzip', 'gzip'], ['identity;q=1, gzip;q=0.5', undefined], ['gzip ; q=1.0', 'gzip'], ['', undefined],
  ];
  for (const [accept, coding] of cases) {
    const res = await get('/openapi.json', { 'accept-encoding': accept });
    t.equal(res.headers['content-encoding'], coding, `Accept-Encoding "${accept}": ${coding ?? 'none'}`);
  }
});

t.test('If-None-Match with the current ETag: 304 without a body; any other: the answer', async (t) => {
  for (const path of FILES) {
    for (const accept of ['', 'gzip', 'br']) {
      const first = await get(path, { 'accept-encoding': accept });
      const etag = first.headers.etag as string;
      const again = await get(path, { 'accept-encoding': accept, 'if-none-match': etag });
      t.equal(again.status, 304, `${path} [${accept}]: 304 for its ETag`);
      t.equal(again.body.byteLength, 0, 'no body');
      t.equal(again.headers['content-length'], undefined, 'no Content-Length');
      t.equal(again.headers['content-type'], undefined, 'no Content-Type');
      t.equal(again.headers['content-encoding'], undefined, 'no Content-Encoding');
      t.equal(again.headers.etag, etag, 'the ETag');
      t.equal(again.headers['cache-control'], first.headers['cache-control'], 'the Cache-Control');
      t.equal(again.headers.vary, 'Accept-Encoding', 'the Vary');
    }
  }
  const { etag } = (await get('/docs', { 'accept-encoding': 'gzip' })).headers as { etag: string };
  const plainEtag = (await get('/docs')).headers.etag as string;
  const status = async (accept: string, match: string) => (await get('/docs', { 'accept-encoding': accept, 'if-none-match': match })).status;
  t.equal(await status('gzip', `W/${etag}`), 304, 'a weak form of it: 304 (If-None-Match compares weakly)');
  t.equal(await status('gzip', `"old", ${etag}`), 304, 'among others: 304');
  t.equal(await status('gzip', '*'), 304, '*: 304');
  t.equal(await status('gzip', '"old"'), 200, 'another ETag: 200');
  t.equal(await status('gzip', plainEtag), 200, 'the uncompressed answer\'s ETag, asking for gzip: 200 (other bytes)');
  t.equal(await status('', etag), 200, 'the gzip ETag, asking for no coding: 200');
});

t.test('a 304 leaves the connection serving', async (t) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const etag = (await get('/docs/reference.css', { 'accept-encoding': 'br' }, agent)).headers.etag as string;
  const sockets = new Set<unknown>();
  agent.on('free', (socket) => sockets.add(socket));
  const statuses: number[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await get(i % 2 === 0 ? '/docs/reference.css' : '/healthz', i % 2 === 0 ? { 'accept-encoding': 'br', 'if-none-match': etag } : {}, agent);
    statuses.push(res.status);
  }
  t.same(statuses, Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 304 : 200)), '304s and other answers in turn');
  t.equal(sockets.size, 1, 'all on one connection');
});

t.test('every process serves the same bytes: one ETag for all', async (t) => {
  for (const path of ['/openapi.json', '/admin/openapi.json', '/docs', '/admin/docs']) {
    const etags = new Set<string>();
    for (let i = 0; i < 12; i++) etags.add((await get(path, { 'accept-encoding': 'br' })).headers.etag as string); // a new connection each
    t.equal(etags.size, 1, `${path}: one ETag over 12 connections (${[...etags].join(', ')})`);
  }
});
