import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { ADDRESSES, http2Exchange, PROTOCOLS, viaFront, type Protocol } from '../helpers/http2Client.js';
import { startNginxFront } from '../helpers/nginxFront.js';
import { hopByHopHeaders } from '../helpers/openapi.js';
import type { RawAnswer } from '../helpers/rawHttp.js';

// The documentation through the production front of deploy/nginx, over HTTP/1.1 and HTTP/2:
// /docs, Swagger UI and their files for everyone; the admin API's document and pages only
// from internal addresses, where its Swagger UI page works with the files of /docs/ that
// everyone gets; and the service's compression and validators reaching the browser as sent
// (Content-Encoding, Vary, ETag, a 304 without a body), the front adding nothing of its own.

const { outside: OUTSIDE, internal: INTERNAL } = ADDRESSES;
const protocols = PROTOCOLS;

t.test('the documentation through the nginx front', async (t) => {
  const h = await startHarness(t, 'nginx-docs', { TRUST_PROXY: '1' });
  const front = await startNginxFront(t, h.service.port, { geo: `${INTERNAL}/32 internal;` });

  const via = (protocol: Protocol, from: string, path: string, headers: Record<string, string> = {}): Promise<RawAnswer> =>
    viaFront(front.tlsPort, protocol, { path, headers, from });

  /** The files a page links, as paths from the page. */
  const filesOf = (page: string, html: string): string[] => [...html.matchAll(/(?:href|src)="([^"#]+\.(?:css|js|png))"/g)]
    .map((m) => new URL(m[1] as string, `https://front${page}`).pathname);

  t.test('the public documentation for everyone, the admin API\'s for internal addresses only', async (t) => {
    for (const protocol of protocols) {
      for (const path of ['/openapi.json', '/docs', '/docs/interactive']) {
        t.equal((await via(protocol, OUTSIDE, path)).status, 200, `${protocol} ${path} from outside`);
      }
      for (const path of ['/admin/openapi.json', '/admin/docs', '/admin/docs/interactive']) {
        t.equal((await via(protocol, OUTSIDE, path)).status, 404, `${protocol} ${path} from outside: 404`);
        t.equal((await via(protocol, INTERNAL, path)).status, 200, `${protocol} ${path} from an internal address`);
      }
      const page = await via(protocol, INTERNAL, '/admin/docs/interactive');
      const files = filesOf('/admin/docs/interactive', page.text);
      t.ok(files.length >= 5 && files.every((f) => f.startsWith('/docs/')), `${protocol}: the admin Swagger UI's files are those of /docs/ (${files.join(', ')})`);
      for (const file of files) t.equal((await via(protocol, OUTSIDE, file)).status, 200, `${protocol} ${file}, which everyone gets`);
      const reference = await via(protocol, INTERNAL, '/admin/docs');
      for (const file of filesOf('/admin/docs', reference.text)) t.equal((await via(protocol, OUTSIDE, file)).status, 200, `${protocol} ${file} of /admin/docs`);
    }
  });

  t.test('a page with a trailing slash: the service\'s redirect, its relative Location as sent', async (t) => {
    for (const protocol of protocols) {
      for (const [path, from, location] of [['/docs/', OUTSIDE, '../docs'], ['/dashboard/', OUTSIDE, '../dashboard'], ['/admin/docs/', INTERNAL, '../docs']] as const) {
        const got = await via(protocol, from, path);
        t.equal(got.status, 308, `${protocol} ${path}: 308`);
        t.equal(got.headers.location, location, `${protocol} ${path}: Location ${location}`);
      }
      t.equal((await via(protocol, OUTSIDE, '/admin/docs/')).status, 404, `${protocol} /admin/docs/ from outside: 404, as /admin/docs`);
    }
  });

  t.test('compression and validators pass through as the service sends them', async (t) => {
    for (const protocol of protocols) {
      for (const [path, from] of [['/docs/swagger-ui-bundle.js', OUTSIDE], ['/openapi.json', OUTSIDE], ['/admin/openapi.json', INTERNAL]] as const) {
        const direct = await fetch(`${h.url}${path}`, { headers: { 'accept-encoding': 'br' } });
        for (const coding of ['br', 'gzip']) {
          const got = await via(protocol, from, path, { 'accept-encoding': coding });
          t.equal(got.headers['content-encoding'], coding, `${protocol} ${path}: ${coding}`);
          t.equal(got.headers.vary, 'Accept-Encoding', `${protocol} ${path} ${coding}: Vary`);
          t.match(got.headers.etag, new RegExp(`^"[A-Za-z0-9_-]+-${coding}"$`), `${protocol} ${path} ${coding}: the service's ETag, strong`);
          const again = await via(protocol, from, path, { 'accept-encoding': coding, 'if-none-match': got.headers.etag as string });
          t.equal(again.status, 304, `${protocol} ${path} ${coding}: 304 for its ETag`);
          t.equal(again.text, '', 'without a body');
        }
        t.equal((await via(protocol, from, path)).headers['content-encoding'], undefined, `${protocol} ${path}: nothing compressed without Accept-Encoding`);
        t.equal((await via(protocol, from, path, { 'accept-encoding': 'br' })).headers.etag, direct.headers.get('etag'), `${protocol} ${path}: the ETag the service sends`);
      }
    }
  });

  t.test('the admin document asks for no header HTTP/2 forbids', async (t) => {
    const got = await http2Exchange(front.tlsPort, { path: '/admin/openapi.json', from: INTERNAL });
    t.equal(got.status, 200);
    const doc = got.body as { paths: Record<string, Record<string, unknown>> };
    const found = hopByHopHeaders(doc);
    t.same(found, [], 'no Connection, Keep-Alive or Transfer-Encoding in any response');
    t.ok(Object.keys(doc.paths).length >= 8, 'the document was read');
  });
});
