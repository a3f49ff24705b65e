import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Headers } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { staticFile, type StaticFile } from '../http/static.js';
import { buildDocument } from '../openapi/document.js';
import { referencePage } from '../openapi/reference.js';
import { fileDoc, fromMemory, pageDoc, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf, messageErrorOf, timestampedErrorOf } from '../openapi/schemas.js';
import type { ErrorSchemas } from '../openapi/transport.js';
import { DOCS_CSP, interactivePage, loadViewer, REFERENCE_CSP } from '../openapi/viewer.js';
import { projectRoot } from '../paths.js';
import { codedErrors, messageErrors, timestampedErrors } from './replies.js';

// The documentation, in two parts that a front can keep apart by path:
// - public: GET /openapi.json (every route but the admin API's), /docs (its reference page),
//   /docs/interactive (Swagger UI on it) and /docs/{asset} (the pages' files);
// - admin, registered only with the admin API and under /admin/ like it, so that a front
//   that keeps /admin/ to internal addresses keeps its documentation there too:
//   GET /admin/openapi.json, /admin/docs and /admin/docs/interactive, whose files are those
//   of /docs/ (the same bytes, cached once by a browser).
// Each document lists its own documentation routes. Everything is built once at start and
// compressed then (src/http/static.ts): a request picks an answer by Accept-Encoding and
// If-None-Match. Why a reference page first and Swagger UI on request: src/openapi/viewer.ts.

const PAGE_TYPE = 'text/html; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
/** the pages and the documents: revalidated each time (they change with a deployment; the ETag makes that a 304) */
const NO_CACHE = 'no-cache';
/** the pages' files (Swagger UI's and ours, src/openapi/swagger-ui/): a day (they change with a swagger-ui-dist version or a deployment) */
const ASSET_CACHE = 'public, max-age=86400';

const assetNotFound = codedErrors('NOT_FOUND');

/** How each family of transport errors (./replies.ts) is shaped in the documents. */
const ERROR_SCHEMAS: ErrorSchemas = new Map([
  [codedErrors, codedErrorOf],
  [messageErrors, messageErrorOf],
  [timestampedErrors, (bodies: unknown[]) => timestampedErrorOf(bodies)],
]);

type Part = 'public' | 'admin';

const WHOSE: Record<Part, string> = { public: 'the public API (every route but the admin API)', admin: 'the admin API' };

function documentDoc(part: Part): RouteDoc {
  return fromMemory({
    summary: `This document: OpenAPI 3.1 of ${WHOSE[part]}`,
    description: 'Generated at start from the routes\' own TypeBox schemas and replies (src/openapi/).',
    tags: ['documentation'],
    auth: 'none',
    neverUnavailable: true,
    responses: {
      200: {
        description: 'the OpenAPI 3.1 document',
        schema: Type.Object(
          { openapi: Type.String({ pattern: '^3\\.1\\.' }), info: Type.Object({}, { additionalProperties: true }), paths: Type.Object({}, { additionalProperties: true }) },
          { additionalProperties: true },
        ),
        examples: [{ summary: 'this document (abridged)', value: { openapi: '3.1.0', info: { title: 'License and sign-token service', version: '0.1.0' }, paths: {} } }],
        headers: ['Cache-Control'],
      },
    },
  });
}

function referenceDoc(part: Part): RouteDoc {
  return fromMemory(pageDoc({
    summary: 'This document as a reference page: every operation by group, each linking to Swagger UI',
    description: 'Plain HTML and a style sheet, no script (Content-Security-Policy).',
    tag: 'documentation',
    example: { summary: 'the page', value: `<!doctype html>\n<html lang="en">…<h1>License and sign-token service${part === 'admin' ? ': admin API' : ''}</h1>…</html>` },
    headers: ['Cache-Control', 'Content-Security-Policy'],
  }));
}

const INTERACTIVE_DOC = fromMemory(pageDoc({
  summary: 'This document, rendered (Swagger UI), with "Try it out"',
  description: 'Served by the service itself, no CDN; the page loads only from this service (Content-Security-Policy), its files from /docs/.',
  tag: 'documentation',
  example: { summary: 'the page', value: '<!doctype html>\n<html lang="en">…<div id="swagger-ui"></div>…</html>' },
  headers: ['Cache-Control', 'Content-Security-Policy'],
}));

const FILE_DOC = {
  summary: 'A file of the documentation pages',
  tag: 'documentation',
  example: { summary: 'the initializer script', value: "window.addEventListener('load', function () { … })" },
  headers: ['Cache-Control'],
};

/** A GET route that answers a file from memory. */
function fileRoute(routePath: string, doc: RouteDoc, file: () => StaticFile, page = false): Route {
  return { method: 'get', path: routePath, errors: codedErrors, doc, needsFileHeaders: true, page, handler: (req) => file().answer(req.acceptEncoding, req.ifNoneMatch) };
}

/**
 * The documentation routes. `routes`: every other route the server registers but the admin
 * API's; `admin`: the admin API's routes when this instance serves it, else null (and no
 * admin documentation either). A registered route without a doc is left out of its
 * document and logged.
 */
export function documentationRoutes(routes: Route[], admin: Route[] | null, config: Config, log: Logger): Route[] {
  const viewer = loadViewer();
  const assets = new Map([...viewer.assets].map(([name, a]) => [name, staticFile(a.body, a.contentType, ASSET_CACHE)]));
  const assetRoute: Route = {
    method: 'get', path: '/docs/:asset', errors: codedErrors, needsFileHeaders: true,
    doc: fromMemory(fileDoc(FILE_DOC, [...viewer.assets.keys()], assetNotFound, codedErrorOf)),
    // names as the pages link them, exactly (as /dashboard's)
    handler: (req) => assets.get(req.params[0] ?? '')?.answer(req.acceptEncoding, req.ifNoneMatch) ?? assetNotFound,
  };
  const version = packageVersion();
  const part = (which: Part, documented: Route[], extra: Route[]): Route[] => {
    const prefix = which === 'public' ? '' : '/admin';
    const csp = (policy: string): Headers => [['Content-Security-Policy', policy]];
    // the page's way to /docs/: beside it on /docs/interactive, two folders up on /admin/docs/interactive
    const interactive = staticFile(interactivePage(which === 'public' ? '' : '../../docs/', 'License and sign-token service'), PAGE_TYPE, NO_CACHE, csp(DOCS_CSP));
    const files: { document?: StaticFile; reference?: StaticFile } = {};
    const own = [
      fileRoute(`${prefix}/openapi.json`, documentDoc(which), () => files.document as StaticFile),
      fileRoute(`${prefix}/docs`, referenceDoc(which), () => files.reference as StaticFile, true),
      fileRoute(`${prefix}/docs/interactive`, INTERACTIVE_DOC, () => interactive, true),
      ...extra,
    ];
    const built = buildDocument([...documented, ...own], {
      version, part: which, cors: config.corsOrigins !== null, bodyLimit: config.bodyLimitBytes,
      // a path no route serves: the 404 in the shape src/service.ts has the HTTP layer answer it in
      errorSchemas: ERROR_SCHEMAS, fallbackErrors: codedErrors,
    });
    if (built.undocumented.length > 0) log.warn({ routes: built.undocumented }, `routes without a doc are missing from ${prefix}/openapi.json`);
    files.document = staticFile(JSON.stringify(built.document), JSON_TYPE, NO_CACHE);
    const reference = referencePage(built.document, which === 'public' ? { root: '' } : { root: '../', see: [{ href: '../docs', text: 'the public API' }] });
    files.reference = staticFile(reference, PAGE_TYPE, NO_CACHE, csp(REFERENCE_CSP));
    return own;
  };
  return [...part('public', routes, [assetRoute]), ...(admin ? part('admin', admin, []) : [])];
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
}
