import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { rawReply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { buildDocument } from '../openapi/document.js';
import { fileDoc, pageDoc, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf } from '../openapi/schemas.js';
import { DOCS_CSP, loadViewer } from '../openapi/viewer.js';
import { projectRoot } from '../paths.js';
import { codedErrors } from './replies.js';

// GET /openapi.json, GET /docs and GET /docs/{asset}: the document of every route the server
// registers (and of itself), built once at start, and Swagger UI rendering it, from memory
// (src/openapi/viewer.ts says why Swagger UI and what its Content-Security-Policy allows).

const PAGE_TYPE = 'text/html; charset=utf-8';
/** the page and the document: revalidated each time (they change with a deployment) */
const NO_CACHE: readonly [string, string] = ['Cache-Control', 'no-cache'];
/** the page's files (Swagger UI's and ours, src/openapi/swagger-ui/): a day (they change with a swagger-ui-dist version or a deployment) */
const ASSET_CACHE: readonly [string, string] = ['Cache-Control', 'public, max-age=86400'];

const assetNotFound = codedErrors('NOT_FOUND');

const openApiDoc: RouteDoc = {
  summary: 'This document: OpenAPI 3.1 of every route',
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
};

const DOCS_PAGE_DOC = pageDoc({
  summary: 'This document, rendered (Swagger UI)',
  description: 'Served by the service itself, no CDN; the page loads only from this service (Content-Security-Policy).',
  tag: 'documentation',
  example: { summary: 'the page', value: '<!doctype html>\n<html lang="en">…<div id="swagger-ui"></div>…</html>' },
  headers: ['Cache-Control', 'Content-Security-Policy'],
});

const DOCS_FILE_DOC = {
  summary: 'A file of the /docs page',
  tag: 'documentation',
  example: { summary: 'the initializer script', value: "window.addEventListener('load', function () { … })" },
  headers: ['Cache-Control'],
};

/**
 * The documentation routes. `served`: every other route the server registers; `unserved`:
 * routes documented though this instance does not serve them (the admin API without
 * ADMIN_TOKEN). A registered route without a doc is left out of the document and logged.
 */
export function documentationRoutes(served: Route[], unserved: Route[], config: Config, log: Logger): Route[] {
  const viewer = loadViewer();
  const assets = new Map([...viewer.assets].map(([name, a]) => [name, rawReply(200, a.body, a.contentType, [ASSET_CACHE])]));
  const page = rawReply(200, viewer.page, PAGE_TYPE, [NO_CACHE, ['Content-Security-Policy', DOCS_CSP]]);
  let document: Reply = { status: '200 OK', body: '{}' };
  const own: Route[] = [
    { method: 'get', path: '/openapi.json', errors: codedErrors, doc: openApiDoc, handler: () => document },
    { method: 'get', path: '/docs', errors: codedErrors, doc: DOCS_PAGE_DOC, handler: () => page },
    {
      method: 'get', path: '/docs/:asset', errors: codedErrors, doc: fileDoc(DOCS_FILE_DOC, [...viewer.assets.keys()], assetNotFound, codedErrorOf),
      handler: (req) => assets.get(req.params[0] ?? '') ?? assetNotFound, // names as the page links them, exactly (as /dashboard's)
    },
  ];
  const built = buildDocument([...served, ...own], {
    version: packageVersion(), unserved, cors: config.corsOrigins !== null, bodyLimit: config.bodyLimitBytes,
  });
  if (built.undocumented.length > 0) log.warn({ routes: built.undocumented }, 'routes without a doc are missing from /openapi.json');
  document = { status: '200 OK', body: JSON.stringify(built.document), headers: [NO_CACHE] };
  return own;
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
}
