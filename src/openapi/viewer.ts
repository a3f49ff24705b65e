import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { projectRoot } from '../paths.js';

// The files of the documentation pages, all read once at start and served from memory:
// Swagger UI (swagger-ui-dist, never from a CDN) and, of our own, its page, its initializer
// and a style sheet (src/openapi/swagger-ui/), and the style sheet of the reference page
// (src/openapi/reference.ts). /docs itself is that reference, which runs no script: Swagger
// UI's script (1.7 MB, 460 KB compressed) and its rendering of the whole document kept
// Lighthouse's mobile performance of /docs at 26 (bench/README.md), so it loads only on
// /docs/interactive, where the reference's links lead.
//
// Why Swagger UI: of the renderers compared with axe-core (WCAG 2.x A/AA) on this document,
// it is the one that runs under a Content-Security-Policy of 'self' with no exception
// (Redoc's styled-components inject <style> elements and its code panes are scrollable
// regions a keyboard cannot reach; RapiDoc and Scalar inject inline styles, load fonts or
// call other hosts, need eval, and leave unnamed inputs and buttons), and it has "Try it
// out" against this very service. What axe found in Swagger UI's own markup (selects and a
// textarea without a name, a link inside each operation's button, unnamed icon buttons,
// text under 4.5:1) is fixed by configuration: its plugin API in init.js (wrapped
// components, no DOM editing after render), syntax highlighting off (every theme has a
// colour under 4.5:1), and a11y.css over its colours. test/system/docs.a11y.browser.test.ts
// holds the page to no serious or critical violation.

export interface Asset {
  body: Uint8Array;
  contentType: string;
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** Ours: the initializer (Swagger UI's options and accessibility plugin), the style sheet over its colours, the reference's style sheet. */
const OWN_DIR = path.join(projectRoot, 'src', 'openapi', 'swagger-ui');

/**
 * The Swagger UI page of a document, at <docs>/interactive (/docs/interactive,
 * /admin/docs/interactive). Relative links, so the service may sit under a path prefix:
 * `assets` leads from the page to /docs/ ('' on /docs/interactive, '../../docs/' on the
 * admin's), and init.js loads ../openapi.json, the document beside <docs>.
 */
export function interactivePage(assets: string, title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}: interactive API documentation</title>
<link rel="stylesheet" href="${assets}swagger-ui.css">
<link rel="stylesheet" href="${assets}index.css">
<link rel="stylesheet" href="${assets}a11y.css">
<link rel="icon" type="image/png" href="${assets}favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${assets}swagger-ui-bundle.js"></script>
<script src="${assets}init.js"></script>
</body>
</html>
`;
}

/**
 * What Content-Security-Policy allows the Swagger UI page: this service only, and data:
 * images (the icons inside Swagger UI's style sheet). Nothing else is needed: no inline
 * script or style element, no eval, no worker or blob:, no font or other host (the browser
 * tests check that the page renders, opens its operations and runs "Try it out" without a
 * violation). Swagger UI's style props are set by React through the CSSOM, which the policy
 * leaves alone.
 */
export const DOCS_CSP = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The reference pages (/docs, /admin/docs) run no script at all: a style sheet and an icon of this service. */
export const REFERENCE_CSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export interface Viewer {
  /** by file name, as the pages link them (/docs/<name>) */
  assets: Map<string, Asset>;
  /** the swagger-ui-dist version */
  version: string;
}

let loaded: Viewer | null = null;

/** Reads Swagger UI's files and ours, once a process (they do not depend on the configuration). */
export function loadViewer(): Viewer {
  if (loaded) return loaded;
  const dist = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const read = (dir: string, file: string): Uint8Array => new Uint8Array(readFileSync(path.join(dir, file)));
  const { version } = JSON.parse(readFileSync(path.join(dist, 'package.json'), 'utf8')) as { version: string };
  const assets = new Map<string, Asset>([
    ['swagger-ui.css', { body: read(dist, 'swagger-ui.css'), contentType: CSS }],
    ['index.css', { body: read(dist, 'index.css'), contentType: CSS }],
    ['a11y.css', { body: read(OWN_DIR, 'a11y.css'), contentType: CSS }],
    ['reference.css', { body: read(OWN_DIR, 'reference.css'), contentType: CSS }],
    ['swagger-ui-bundle.js', { body: read(dist, 'swagger-ui-bundle.js'), contentType: JS }],
    ['favicon-32x32.png', { body: read(dist, 'favicon-32x32.png'), contentType: 'image/png' }],
    ['init.js', { body: read(OWN_DIR, 'init.js'), contentType: JS }],
  ]);
  loaded = { assets, version };
  return loaded;
}
