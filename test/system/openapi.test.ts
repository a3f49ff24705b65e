import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import type { Service } from '../../src/service.js';
import { ADMIN_TOKEN, startHarness, startInProcessHarness } from '../helpers/harness.js';
import { bearer } from '../helpers/jwt.js';
import { Documented, type Media, type OpenApi, type Response } from '../helpers/openapi.js';

// GET /openapi.json against the server that publishes it:
//  (a) every route the server registers is in the document, and every operation of the
//      document is a registered route, the OPTIONS preflight of a public path or the HEAD of
//      a route that answers it (a route without a doc fails here, by name);
//  (b) every example, of a request body or an answer, validates against its schema;
//  (c) the document is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator, offline);
//  (e) /docs serves its page and files.
// Real answers against the document: the contract tests (openapi.contract.*.test.ts);
// Redocly's lint: openapi.lint.test.ts; the input schemas' limits: openapi.inputs.test.ts.

const h = await startHarness(t, 'openapi');

const fetched = await h.request('GET', '/openapi.json');
const doc = fetched.body as OpenApi;
const documented = new Documented(doc);

/** "GET /path/{param}" of a route as registered. */
const routeName = (method: string, path: string): string => `${method.toUpperCase()} ${path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;

t.test('(a) the registered routes and the documented operations are the same set', async (t) => {
  t.equal(fetched.status, 200);
  t.match(fetched.headers.get('content-type') ?? '', /^application\/json/);
  // in this process: only the service object knows the routes it registers
  const { routes } = (await startInProcessHarness(t, 'openapi-routes')).service as Service;
  const registered = new Set(routes.map((r) => routeName(r.method, r.path)));
  const operations = new Set(Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => routeName(m, path))));
  t.ok(registered.size >= 14, `the server registers every route (${registered.size})`);
  for (const route of registered) t.ok(operations.has(route), `${route} is documented (give its Route a doc: src/openapi/routeDoc.ts)`);
  const preflights = new Set(routes.filter((r) => r.cors).map((r) => routeName('options', r.path)));
  const heads = new Set(routes.filter((r) => r.answersHead).map((r) => routeName('head', r.path)));
  t.ok(preflights.size >= 5 && heads.size >= 2, 'public paths have their preflight, pages their HEAD');
  for (const op of operations) t.ok(registered.has(op) || preflights.has(op) || heads.has(op), `${op} is a route the server registers, its preflight or its HEAD`);
  for (const p of [...preflights, ...heads]) t.ok(operations.has(p), `${p} is documented`);
  for (const route of routes) {
    const tags = doc.paths[route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[route.method]?.tags ?? [];
    if (route.path.startsWith('/admin/')) t.same(tags, ['admin'], `${routeName(route.method, route.path)} is tagged admin`);
  }
});

t.test('(a) without ADMIN_TOKEN the admin API is still documented, and not served', async (t) => {
  const plain = await startHarness(t, 'openapi-noadmin', { ADMIN_TOKEN: '' });
  const res = await plain.request('GET', '/openapi.json');
  const paths = Object.keys((res.body as OpenApi).paths);
  t.same(paths.sort(), Object.keys(doc.paths).sort(), 'the same paths as with ADMIN_TOKEN');
  const read = (res.body as OpenApi).paths['/admin/v1/licenses/{licenseKey}']?.get;
  t.match(read?.description, /ADMIN_TOKEN is not set/, 'an admin operation says this instance does not serve it');
  t.match(JSON.stringify(read?.responses['404']), /"NOT_FOUND".*"LICENSE_NOT_FOUND"|"LICENSE_NOT_FOUND".*"NOT_FOUND"/, 'and lists the 404 of a path no route serves');
  t.same((res.body as OpenApi).paths['/admin/v1/licenses']?.post?.responses['404'], { $ref: '#/components/responses/NotFound' }, 'create: that 404 alone');
  t.equal((await plain.request('GET', `/admin/v1/licenses/${randomUUID()}`, undefined, bearer(ADMIN_TOKEN))).status, 404, 'and it is 404');
});

/** Every media object of the document (request bodies and answers), with where it is. */
function mediaObjects(): { where: string; segments: string[]; media: Media }[] {
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
  for (const [name, response] of Object.entries(doc.components.responses as Record<string, Response>)) {
    for (const [type, media] of Object.entries(response.content ?? {})) {
      out.push({ where: `components.responses.${name}`, segments: ['components', 'responses', name, 'content', type, 'schema'], media });
    }
  }
  return out;
}

t.test('(b) every example validates against its schema', async (t) => {
  let examples = 0;
  for (const { where, segments, media } of mediaObjects()) {
    const list = Object.values(media.examples ?? {});
    t.ok(list.length > 0, `${where} has an example`);
    const validate = documented.validatorAt(segments);
    for (const example of list) {
      examples++;
      t.ok(validate(example.value), `${where} "${example.summary}": ${validate(example.value) ? 'valid' : documented.errorsOf(validate)}`);
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

t.test('(c) the document is valid OpenAPI 3.1', async (t) => {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc) as unknown as Parameters<Validator['validate']>[0]);
  t.ok(result.valid, `valid: ${JSON.stringify(result.errors ?? null).slice(0, 2000)}`);
  t.equal(validator.version, '3.1', 'OpenAPI 3.1');
  t.same(doc.components.securitySchemes && Object.keys(doc.components.securitySchemes).sort(), ['accessToken', 'adminToken'],
    'the schemes the operations use (METRICS_TOKEN is not set)');
});

t.test('(e) /docs serves its page and every file the page links, from this service', async (t) => {
  const page = await h.request('GET', '/docs');
  t.equal(page.status, 200);
  t.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  t.equal(page.headers.get('cache-control'), 'no-cache');
  const csp = page.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'self'/, 'a Content-Security-Policy of \'self\'');
  t.notMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/, 'no inline script, no eval, no other host');
  t.notMatch(page.text, /<script>|<style>|\sstyle=|\son[a-z]+=/i, 'no inline script or style the policy would block');
  const links = [...page.text.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1] as string);
  t.ok(links.length >= 4, `the page links its files (${links.join(', ')})`);
  t.ok(links.includes('docs/a11y.css'), 'among them the style sheet over Swagger UI\'s colours (docs.a11y.browser.test.ts)');
  const types: Record<string, RegExp> = { css: /^text\/css/, js: /^text\/javascript/, png: /^image\/png$/ };
  for (const link of links) {
    t.notMatch(link, /^(https?:)?\/\//, `${link}: on this service, no CDN`);
    const url = new URL(link, `${h.url}/docs`);
    const res = await fetch(url);
    const body = new Uint8Array(await res.arrayBuffer());
    t.equal(res.status, 200, `${url.pathname}: 200`);
    t.match(res.headers.get('content-type') ?? '', types[link.split('.').pop() as string] ?? /^$/, `${url.pathname}: its Content-Type`);
    t.equal(res.headers.get('cache-control'), 'public, max-age=86400', `${url.pathname}: kept a day`);
    t.ok(body.byteLength > 0, `${url.pathname}: not empty`);
  }
  const init = await h.request('GET', '/docs/init.js');
  t.match(init.text, /url: 'openapi\.json'/, 'the initializer loads this document');
  t.equal((await h.request('GET', '/docs/swagger-ui-bundle.js.map')).status, 404, 'files not linked are not served');
});
