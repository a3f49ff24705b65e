import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import { prefersHtml } from '../http/accept.js';
import { rawReply, reply, type Headers } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { RouteDoc } from '../openapi/routeDoc.js';
import { projectRoot } from '../paths.js';
import { codedErrors } from './replies.js';

// GET /: where to start. JSON with links for API clients (and curl), a small page of the same
// links for a browser, chosen by Accept. Both answers are built once, at start.

/** The name the OpenAPI document gives the service (its info.title); test/routes/root.happy.test.ts holds them equal. */
export const SERVICE_NAME = 'License and sign-token service';

/** Where each thing is, relative to this origin (behind a proxy the service does not know its public URL). */
const LINKS = {
  docs: '/docs',
  openapi: '/openapi.json',
  dashboard: '/dashboard',
  health: '/healthz',
  ready: '/readyz',
  jwks: '/.well-known/jwks.json',
} as const;

/** The admin API's documentation: linked only by an instance that serves the admin API (behind the front, internal addresses only). */
const ADMIN_LINKS = {
  adminDocs: '/admin/docs',
  adminOpenapi: '/admin/openapi.json',
} as const;

type Links = typeof LINKS & Partial<typeof ADMIN_LINKS>;

// The page's only style, inline and allowed by its hash: the page loads nothing else but the
// dashboard's icon, from this service.
const STYLE = 'body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1f2328;background:#fff}'
  + 'main{max-width:40rem;margin:2.5rem auto;padding:0 1rem}a{color:#0969da}li{margin:.35rem 0}'
  + '.version{color:#59636e}';

const styleHash = createHash('sha256').update(STYLE).digest('base64');

/** Nothing but the style above and images of this service; never framed, no form, no base. */
export const ROOT_CSP = `default-src 'none'; style-src 'sha256-${styleHash}'; img-src 'self'; `
  + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * Both answers carry the same headers: the CSP, no Referer to the sites linked from a page,
 * revalidated (they change with a deployment), and Vary: Accept, since one URL answers in
 * two media types and a cache must keep them apart.
 */
const HEADERS: Headers = [
  ['Content-Security-Policy', ROOT_CSP],
  ['Referrer-Policy', 'no-referrer'],
  ['Cache-Control', 'no-cache'],
  ['Vary', 'Accept'],
];

function page(version: string, links: Links): string {
  const item = (href: string, text: string, what: string): string => `<li><a href="${href}">${text}</a>: ${what}</li>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${SERVICE_NAME}</title>
<link rel="icon" href="/dashboard/icon.svg" type="image/svg+xml">
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${SERVICE_NAME}</h1>
<p class="version">Version ${version}</p>
<p>Licenses with a signing quota, single-use signing tokens, and signed receipts of each signature.</p>
<h2>Start here</h2>
<ul>
${item(LINKS.docs, 'API documentation', 'every public endpoint, its answers and examples, to try from the browser')}
${item(LINKS.dashboard, 'Quota dashboard', 'a license\'s quota, expiry and redemptions, for its holder')}
</ul>
<h2>For programs and operators</h2>
<ul>
${[
    item(LINKS.openapi, 'OpenAPI document', 'the public API as OpenAPI 3.1 (JSON)'),
    item(LINKS.health, 'Health', 'Redis, Postgres and the usage worker\'s lag'),
    item(LINKS.ready, 'Readiness', 'whether this instance can serve, for load balancers'),
    item(LINKS.jwks, 'Public keys (JWKS)', 'to verify license tokens and signed receipts'),
    ...(links.adminDocs ? [item(links.adminDocs, 'Admin API documentation', 'license administration, for operators')] : []),
    ...(links.adminOpenapi ? [item(links.adminOpenapi, 'Admin API OpenAPI document', 'the admin API as OpenAPI 3.1 (JSON)')] : []),
  ].join('\n')}
</ul>
</main>
</body>
</html>
`;
}

const Index = Type.Object({
  success: Type.Literal(true),
  service: Type.String({ description: 'the service\'s name' }),
  version: Type.String({ description: 'the version of this deployment' }),
  links: Type.Object({
    ...Object.fromEntries(Object.keys(LINKS).map((name) => [name, Type.String({ description: 'a path on this origin' })])),
    ...Object.fromEntries(Object.keys(ADMIN_LINKS).map((name) => [name, Type.Optional(Type.String({
      description: 'a path on this origin; only when this instance serves the admin API (ADMIN_TOKENS or ADMIN_TOKEN set)',
    }))])),
  }, { additionalProperties: false }),
}, { additionalProperties: false });

function doc(json: unknown, version: string, links: Links): RouteDoc {
  return {
    summary: 'Where to start: links to the documentation, the dashboard and the health checks',
    description: 'JSON by default; a page of the same links when the request\'s Accept prefers text/html to application/json '
      + '(as a browser\'s does). Built at start; answers HEAD too.',
    tags: ['documentation'],
    auth: 'none',
    neverUnavailable: true,
    responses: {
      200: {
        description: 'the links, as JSON or as a page',
        schema: Index,
        examples: [{ summary: 'the links', value: json }],
        otherMedia: [{ contentType: 'text/html', schema: Type.String(), examples: [{ summary: 'the page', value: page(version, links) }] }],
        headers: ['Cache-Control', 'Content-Security-Policy', { name: 'Vary', value: 'Accept' }],
      },
    },
  };
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/** GET / (and HEAD /): the links, JSON or a page by Accept, each answer built here once; `admin`: the admin API is served. */
export function rootRoute(admin: boolean): Route {
  const version = packageVersion();
  const links: Links = admin ? { ...LINKS, ...ADMIN_LINKS } : LINKS;
  const body = { success: true, service: SERVICE_NAME, version, links };
  const json = reply(200, body, HEADERS);
  const html = rawReply(200, Buffer.from(page(version, links)), 'text/html; charset=utf-8', HEADERS);
  return {
    method: 'get',
    path: '/',
    errors: codedErrors,
    answersHead: true,
    needsAccept: true,
    doc: doc(body, version, links),
    handler: (req) => (prefersHtml(req.accept) ? html : json),
  };
}
