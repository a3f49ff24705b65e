import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import t, { type Test } from 'tap';
import type { Service } from '../../src/service.js';
import { ADMIN_TOKEN, startHarness, startInProcessHarness } from '../helpers/harness.js';
import { bearer } from '../helpers/jwt.js';
import { Documented, type Media, type OpenApi, type Response } from '../helpers/openapi.js';

// GET /openapi.json and GET /admin/openapi.json against the server that publishes them:
//  (a) every route the server registers is in exactly one of the two documents (the admin
//      API and its documentation, everything under /admin/, in the admin one; the rest in
//      the public one), and every operation of either is a registered route, the OPTIONS
//      preflight of a public path or the HEAD of a route that answers it (a route without a
//      doc fails here, by name); without an admin token there is no admin document;
//  (b) every example, of a request body or an answer, validates against its schema;
//  (c) both documents are valid OpenAPI 3.1, each with the components it uses;
//  (e) /docs and /admin/docs serve their pages and files (and redirect from a trailing slash).
// Real answers against the documents: the contract tests (openapi.contract.*.test.ts);
// Redocly's lint: openapi.lint.test.ts; the input schemas' limits: openapi.inputs.test.ts;
// compression and validators: docs.caching.test.ts.

const h = await startHarness(t, 'openapi');

const fetched = await h.request('GET', '/openapi.json');
const doc = fetched.body as OpenApi;
const fetchedAdmin = await h.request('GET', '/admin/openapi.json');
const adminDoc = fetchedAdmin.body as OpenApi;
const DOCUMENTS: [name: string, doc: OpenApi][] = [['/openapi.json', doc], ['/admin/openapi.json', adminDoc]];

/** "GET /path/{param}" of a route as registered. */
const routeName = (method: string, path: string): string => `${method.toUpperCase()} ${path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;
const operationsOf = (d: OpenApi): Set<string> => new Set(Object.entries(d.paths).flatMap(([path, item]) => Object.keys(item).map((m) => routeName(m, path))));

t.test('(a) the registered routes and the operations of the two documents are the same set, each in exactly one', async (t) => {
  for (const res of [fetched, fetchedAdmin]) {
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type') ?? '', /^application\/json/);
  }
  // in this process: only the service object knows the routes it registers
  const { routes } = (await startInProcessHarness(t, 'openapi-routes')).service as Service;
  const registered = new Set(routes.map((r) => routeName(r.method, r.path)));
  const [publicOps, adminOps] = [operationsOf(doc), operationsOf(adminDoc)];
  t.ok(registered.size >= 14, `the server registers every route (${registered.size})`);
  for (const route of registered) {
    const where = [publicOps.has(route) ? '/openapi.json' : '', adminOps.has(route) ? '/admin/openapi.json' : ''].filter(Boolean);
    t.same(where, [/ \/admin\//.test(route) ? '/admin/openapi.json' : '/openapi.json'], `${route} is in exactly one document, its part's (give its Route a doc: src/openapi/routeDoc.ts)`);
  }
  t.same(Object.keys(doc.paths).filter((p) => p.toLowerCase().startsWith('/admin')), [], 'the public document has no /admin path');
  t.same(Object.keys(adminDoc.paths).filter((p) => !p.startsWith('/admin/')), [], 'the admin document has nothing else');
  t.ok(adminOps.size >= 11, `the admin document: the admin API and its documentation (${adminOps.size} operations)`);
  const preflights = new Set(routes.filter((r) => r.cors).map((r) => routeName('options', r.path)));
  const heads = new Set(routes.filter((r) => r.answersHead).map((r) => routeName('head', r.path)));
  t.ok(preflights.size >= 5 && heads.size >= 2, 'public paths have their preflight, pages their HEAD');
  for (const op of [...publicOps, ...adminOps]) t.ok(registered.has(op) || preflights.has(op) || heads.has(op), `${op} is a route the server registers, its preflight or its HEAD`);
  for (const p of [...preflights, ...heads]) t.ok(publicOps.has(p), `${p} is documented`);
  for (const route of routes.filter((r) => r.path.startsWith('/admin/v1/'))) {
    t.same(adminDoc.paths[route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[route.method]?.tags, ['admin'], `${routeName(route.method, route.path)} is tagged admin`);
  }
});

t.test('(a) without an admin token: no admin API, no admin document, the same public document', async (t) => {
  const plain = await startHarness(t, 'openapi-noadmin', { ADMIN_TOKEN: '' });
  const res = await plain.request('GET', '/openapi.json');
  t.same(Object.keys((res.body as OpenApi).paths).sort(), Object.keys(doc.paths).sort(), 'the same paths as with an admin token');
  for (const path of ['/admin/openapi.json', '/admin/docs', '/admin/docs/interactive', `/admin/v1/licenses/${randomUUID()}`]) {
    const answer = await plain.request('GET', path, undefined, bearer(ADMIN_TOKEN));
    t.equal(answer.status, 404, `${path}: 404`);
    t.equal(answer.body?.error?.code, 'NOT_FOUND', `${path}: a path no route serves`);
  }
});

/** Every media object of a document (request bodies and answers), with where it is. */
function mediaObjects(doc: OpenApi): { where: string; segments: string[]; media: Media }[] {
  const out: { where: string; segments: string[]; media: Media }[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
        out.push({ where: `${method.toUpperCase()} ${path} request`, segments: ['paths', path, method, 'requestBody', 'content', type, 'schema'], media });
      }
      for (const [status, response] of Object.entries(op.responses)) {
        if ('$ref' in response) continue; // a component response: checked once, below
        for (const [type, media] of Object.entries(response.content ?? {})) {
          out.push({ where: `${method.toUpperCase()} ${path} ${status}`, segments: ['paths', path, method, 'responses', status, 'content', type, 'schema'], media });
        }
      }
    }
  }
  for (const [name, response] of Object.entries((doc.components.responses ?? {}) as Record<string, Response>)) {
    for (const [type, media] of Object.entries(response.content ?? {})) {
      out.push({ where: `components.responses.${name}`, segments: ['components', 'responses', name, 'content', type, 'schema'], media });
    }
  }
  return out;
}

t.test('(b) every example validates against its schema', async (t) => {
  let examples = 0;
  for (const [name, d] of DOCUMENTS) {
    const documented = new Documented(d);
    for (const { where, segments, media } of mediaObjects(d)) {
      const list = Object.values(media.examples ?? {});
      t.ok(list.length > 0, `${name} ${where} has an example`);
      const validate = documented.validatorAt(segments);
      for (const example of list) {
        examples++;
        t.ok(validate(example.value), `${name} ${where} "${example.summary}": ${validate(example.value) ? 'valid' : documented.errorsOf(validate)}`);
      }
    }
  }
  t.ok(examples >= 80, `every answer has its examples (${examples})`);
  const all = JSON.stringify(doc);
  for (const message of ['Token boş olamaz', 'Token süresi dolmuş', 'Geçersiz token', 'Bu token zaten kullanılmış. Yeni token alınız.',
    'Bu domain için yetki yok', 'İmza kotası doldu', 'Çok fazla istek. Lütfen bekleyiniz.', 'Lisans anahtarı veya şifre hatalı',
    'Kota bilgisi başarıyla getirildi', 'Token doğrulandı, imza kotası düşüldü']) {
    t.ok(all.includes(JSON.stringify(message)), `the published message "${message}" is in an example`);
  }
});

t.test('(c) both documents are valid OpenAPI 3.1, each with the components it uses', async (t) => {
  for (const [name, d] of DOCUMENTS) {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(d) as unknown as Parameters<Validator['validate']>[0]);
    t.ok(result.valid, `${name} is valid: ${JSON.stringify(result.errors ?? null).slice(0, 2000)}`);
    t.equal(validator.version, '3.1', `${name}: OpenAPI 3.1`);
    const { schemas = {}, ...rest } = d.components as Record<string, Record<string, unknown>>;
    for (const component of Object.keys(schemas)) {
      const others = JSON.stringify({ ...d, components: { ...rest, schemas: { ...schemas, [component]: {} } } });
      t.ok(others.includes(`"#/components/schemas/${component}"`), `${name}: ${component} is referred to`);
    }
  }
  t.same(doc.components.securitySchemes && Object.keys(doc.components.securitySchemes).sort(), ['accessToken'],
    'the public document: the schemes its operations use (METRICS_TOKEN is not set)');
  t.same(adminDoc.components.securitySchemes && Object.keys(adminDoc.components.securitySchemes), ['adminToken'], 'the admin document: the admin token');
  t.ok(adminDoc.components.schemas?.License, 'the admin document has the License its answers refer to');
});

/** The href and src of every link of a page, each with the path it leads to from the page. */
function linksOf(page: string, text: string): { link: string; path: string }[] {
  return [...text.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => ({ link: m[1] as string, path: new URL(m[1] as string, `${h.url}${page}`).pathname }));
}

const TYPES: Record<string, RegExp> = { css: /^text\/css/, js: /^text\/javascript/, png: /^image\/png$/ };

/** Each file a page links is served by /docs/{asset} with its type, kept a day. */
async function filesServed(t: Test, page: string, files: { link: string; path: string }[]): Promise<void> {
  for (const { link, path } of files) {
    t.notMatch(link, /^(https?:)?\/\//, `${page}: ${link} is on this service, no CDN`);
    t.match(path, /^\/docs\/[^/]+$/, `${page}: ${link} is a file of /docs/`);
    const res = await fetch(`${h.url}${path}`);
    t.equal(res.status, 200, `${path}: 200`);
    t.match(res.headers.get('content-type') ?? '', TYPES[path.split('.').pop() as string] ?? /^$/, `${path}: its Content-Type`);
    t.equal(res.headers.get('cache-control'), 'public, max-age=86400', `${path}: kept a day`);
    t.ok((await res.arrayBuffer()).byteLength > 0, `${path}: not empty`);
  }
}

t.test('(e) /docs and /admin/docs: reference pages without a script, every operation linked to Swagger UI', async (t) => {
  for (const [page, d] of [['/docs', doc], ['/admin/docs', adminDoc]] as const) {
    const res = await h.request('GET', page);
    t.equal(res.status, 200, `${page}: 200`);
    t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    t.equal(res.headers.get('cache-control'), 'no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    t.match(csp, /default-src 'none'/, `${page}: nothing allowed but what the policy names`);
    t.notMatch(csp, /script-src|unsafe-|https?:|\*/, `${page}: no script at all, no other host`);
    t.notMatch(res.text, /<script|<style|\sstyle=|\son[a-z]+=/i, `${page}: no script, no inline style`);
    const links = linksOf(page, res.text);
    for (const [path, item] of Object.entries(d.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const link = links.find((l) => l.link.endsWith(`#/${op.tags[0]}/${op.operationId}`));
        t.equal(link?.path, `${page}/interactive`, `${page} links ${method.toUpperCase()} ${path} to it in Swagger UI`);
      }
    }
    t.ok(links.some((l) => l.path === page.replace('docs', 'openapi.json')), `${page} links its document`);
    await filesServed(t, page, links.filter((l) => /\.(css|png)$/.test(l.link)));
  }
});

t.test('(e) /docs/ and /admin/docs/, with a trailing slash: a permanent redirect to the page, which then loads', async (t) => {
  for (const page of ['/docs', '/admin/docs']) {
    const res = await h.request('GET', `${page}/`);
    t.equal(res.status, 308, `${page}/: 308`);
    const location = res.headers.get('location') ?? '';
    t.equal(new URL(location, `${h.url}${page}/`).pathname, page, `${page}/ points at ${page}`);
    t.equal(res.text, '', 'no body');
    const followed = await h.request('GET', new URL(location, `${h.url}${page}/`).pathname);
    t.equal(followed.status, 200, `${page}/ followed: the page`);
    t.match(followed.text, /<h1>License and sign-token service/);
  }
  const api = await h.request('GET', '/healthz/');
  t.equal(api.status, 404, 'an API path with a slash is no page: 404');
  t.equal(api.body?.error?.code, 'NOT_FOUND', 'in its JSON');
});

t.test('(e) /docs/interactive and /admin/docs/interactive: Swagger UI on the document beside, its files from /docs/', async (t) => {
  for (const [page, document] of [['/docs/interactive', '/openapi.json'], ['/admin/docs/interactive', '/admin/openapi.json']]) {
    const res = await h.request('GET', page as string);
    t.equal(res.status, 200, `${page}: 200`);
    t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    t.equal(res.headers.get('cache-control'), 'no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    t.match(csp, /default-src 'self'/, 'a Content-Security-Policy of \'self\'');
    t.notMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/, 'no inline script, no eval, no other host');
    t.notMatch(res.text, /<script>|<style>|\sstyle=|\son[a-z]+=/i, 'no inline script or style the policy would block');
    const links = linksOf(page as string, res.text);
    t.ok(links.length >= 5, `the page links its files (${links.map((l) => l.link).join(', ')})`);
    t.ok(links.some((l) => l.path === '/docs/a11y.css'), 'among them the style sheet over Swagger UI\'s colours (docs.a11y.browser.test.ts)');
    await filesServed(t, page as string, links);
    const init = await h.request('GET', '/docs/init.js');
    const url = /url: '([^']+)'/.exec(init.text)?.[1] ?? '';
    t.equal(new URL(url, `${h.url}${page}`).pathname, document, `${page}: the initializer loads ${document}`);
  }
  t.equal((await h.request('GET', '/docs/swagger-ui-bundle.js.map')).status, 404, 'files not linked are not served');
  t.equal((await h.request('GET', '/admin/docs/init.js')).status, 404, 'the admin pages have no files of their own');
});
