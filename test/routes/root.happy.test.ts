import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { projectRoot } from '../../src/paths.js';
import { startHarness } from '../helpers/harness.js';
import type { OpenApi } from '../helpers/openapi.js';

// GET / as a user meets it first: curl or an API client gets JSON with the links, a browser
// gets a page of the same links (Accept decides, as RFC 9110 says: the most specific range
// gives a type its quality; a tie is JSON's), HEAD the same without a body, and every link
// leads somewhere that answers.

const h = await startHarness(t, 'root-happy');

const JSON_TYPE = 'application/json; charset=utf-8';
const HTML_TYPE = 'text/html; charset=utf-8';
/** What Chromium and Firefox send for a page they navigate to. */
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const version = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;

interface Index {
  success: boolean;
  service: string;
  version: string;
  links: Record<string, string>;
}

/** The href of every link of a page. */
const hrefs = (page: string): string[] => [...page.matchAll(/<a href="([^"]*)"/g)].map((m) => m[1] as string);

t.test('no Accept (curl, most API clients): JSON with the links', async (t) => {
  const res = await h.request('GET', '/');
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), JSON_TYPE);
  t.equal(res.headers.get('vary'), 'Accept', 'one URL, two media types: caches keep them apart');
  const body = res.body as Index;
  const doc = (await h.request('GET', '/openapi.json')).body as OpenApi & { info: { title: string } };
  t.same(body, {
    success: true,
    service: doc.info.title,
    version,
    links: {
      docs: '/docs', openapi: '/openapi.json', dashboard: '/dashboard', health: '/healthz', ready: '/readyz', jwks: '/.well-known/jwks.json',
      adminDocs: '/admin/docs', adminOpenapi: '/admin/openapi.json',
    },
  }, 'the name the document gives the service, the version of package.json, and where things are (the admin API\'s documentation too: it is served)');
});

t.test('without an admin token: no link to the admin API\'s documentation, which is not served', async (t) => {
  const plain = await startHarness(t, 'root-noadmin', { ADMIN_TOKEN: '' });
  const json = (await plain.request('GET', '/')).body as Index;
  t.same(Object.keys(json.links).filter((name) => name.startsWith('admin')), [], 'no admin link in the JSON');
  const page = (await plain.request('GET', '/', undefined, { accept: BROWSER })).text;
  t.same(hrefs(page).filter((href) => href.startsWith('/admin/')), [], 'nor on the page');
  t.equal((await plain.request('GET', '/admin/docs')).status, 404, '/admin/docs: 404');
});

t.test('Accept decides between JSON and the page', async (t) => {
  const cases: [accept: string, type: string][] = [
    ['application/json', JSON_TYPE],
    ['*/*', JSON_TYPE], // curl's
    [BROWSER, HTML_TYPE],
    ['text/html', HTML_TYPE],
    ['TEXT/HTML', HTML_TYPE],
    ['text/*', HTML_TYPE],
    ['application/json, text/html', JSON_TYPE],
    ['application/json;q=0.9, text/html', HTML_TYPE],
    ['text/html;q=0.5, application/json', JSON_TYPE],
    ['text/html;q=0, */*', JSON_TYPE],
    ['text/html; charset=utf-8; q=0.7, application/*;q=0.6', HTML_TYPE],
    ['application/*, text/html;q=0.9', JSON_TYPE],
    ['*/*;q=0.1, text/html;q=0.2', HTML_TYPE],
    ['image/png', JSON_TYPE],
    ['', JSON_TYPE],
  ];
  for (const [accept, type] of cases) {
    const res = await h.request('GET', '/', undefined, { accept });
    t.equal(res.status, 200, `Accept: ${accept}: 200`);
    t.equal(res.headers.get('content-type'), type, `Accept: ${accept}: ${type}`);
  }
});

t.test('a browser gets a page: titled, in English, with headings and a link to each place', async (t) => {
  const res = await h.request('GET', '/', undefined, { accept: BROWSER });
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), HTML_TYPE);
  t.equal(res.headers.get('vary'), 'Accept');
  t.match(res.text, /^<!doctype html>\n<html lang="en">/);
  t.match(res.text, /<title>License and sign-token service<\/title>/);
  t.match(res.text, /<h1>License and sign-token service<\/h1>/);
  t.match(res.text, new RegExp(`Version ${version.replace(/\./g, '\\.')}`));
  t.ok([...res.text.matchAll(/<h2>/g)].length >= 2, 'sections under headings');
  const json = (await h.request('GET', '/')).body as Index;
  t.same(hrefs(res.text).sort(), Object.values(json.links).sort(), 'the page links to what the JSON names');
  for (const [, text] of res.text.matchAll(/<a href="[^"]*">([^<]*)<\/a>/g)) {
    t.ok((text as string).length >= 6 && !/^(here|link|click)/i.test(text as string), `"${text}" says where it leads`);
  }
});

t.test('HEAD: the GET\'s status and headers, no body', async (t) => {
  for (const accept of [undefined, 'application/json', BROWSER]) {
    const headers: Record<string, string> = accept === undefined ? {} : { accept };
    const [get, head] = [await h.request('GET', '/', undefined, headers), await h.request('HEAD', '/', undefined, headers)];
    t.equal(head.status, 200, `HEAD with Accept ${accept}: 200`);
    t.equal(head.text, '', 'no body');
    for (const name of ['content-type', 'content-security-policy', 'referrer-policy', 'cache-control', 'vary']) {
      t.equal(head.headers.get(name), get.headers.get(name), `HEAD with Accept ${accept}: ${name} as the GET's`);
    }
  }
});

t.test('every link answers 200 here, and so does the page\'s icon', async (t) => {
  const json = (await h.request('GET', '/')).body as Index;
  const page = (await h.request('GET', '/', undefined, { accept: BROWSER })).text;
  const icon = /<link rel="icon" href="([^"]*)"/.exec(page)?.[1];
  t.equal(icon, '/dashboard/icon.svg');
  for (const link of [...Object.values(json.links), icon as string]) {
    const res = await h.request('GET', link, undefined, { accept: ['/docs', '/admin/docs', '/dashboard'].includes(link) ? BROWSER : 'application/json' });
    t.equal(res.status, 200, `GET ${link}: 200`);
  }
});

t.test('the document lists / with both media types', async (t) => {
  const doc = (await h.request('GET', '/openapi.json')).body as OpenApi;
  const ok = doc.paths['/']?.get?.responses['200'];
  t.ok(ok && 'content' in ok, 'GET / 200 is documented');
  t.same(Object.keys((ok as { content: object }).content).sort(), ['application/json', 'text/html']);
  t.ok(doc.paths['/']?.head, 'and its HEAD');
});
