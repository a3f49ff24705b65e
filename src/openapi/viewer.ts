import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

// The files of /docs: Swagger UI (swagger-ui-dist, served by this service, never from a CDN)
// and the page and initializer of our own, all read once at start and served from memory.
// Swagger UI because it renders OpenAPI 3.1 with "Try it out" against this very service,
// and runs under a Content-Security-Policy of 'self' with no inline script or style sheet
// (Redoc's styled-components inject <style> elements; Scalar's bundle needs inline styles).

export interface Asset {
  body: Uint8Array;
  contentType: string;
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** The page: relative links, so the service may sit under a path prefix. */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>License and sign-token service: API</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
<link rel="stylesheet" href="docs/index.css">
<link rel="icon" type="image/png" href="docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

/** Instead of an inline script, which the Content-Security-Policy forbids. */
const INIT = `'use strict';
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: 'openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
});
`;

/** What Content-Security-Policy allows the page: this service only (data: images are Swagger UI's icons, in its style sheet). */
export const DOCS_CSP = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export interface Viewer {
  page: Uint8Array;
  /** by file name, as the page links them (docs/<name>) */
  assets: Map<string, Asset>;
  /** the swagger-ui-dist version */
  version: string;
}

/** Reads Swagger UI's files once. */
export function loadViewer(): Viewer {
  const dist = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const read = (file: string): Uint8Array => new Uint8Array(readFileSync(path.join(dist, file)));
  const { version } = JSON.parse(readFileSync(path.join(dist, 'package.json'), 'utf8')) as { version: string };
  const assets = new Map<string, Asset>([
    ['swagger-ui.css', { body: read('swagger-ui.css'), contentType: CSS }],
    ['index.css', { body: read('index.css'), contentType: CSS }],
    ['swagger-ui-bundle.js', { body: read('swagger-ui-bundle.js'), contentType: JS }],
    ['favicon-32x32.png', { body: read('favicon-32x32.png'), contentType: 'image/png' }],
    ['init.js', { body: Buffer.from(INIT), contentType: JS }],
  ]);
  return { page: Buffer.from(PAGE), assets, version };
}
