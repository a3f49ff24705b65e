import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { rawReply, type Headers, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { projectRoot } from '../paths.js';
import type { RouteContext } from './context.js';
import { codedErrors } from './replies.js';

// GET /dashboard: the quota dashboard, a page, its scripts, style sheet and icon, read from
// src/dashboard/ once at start (from the source tree and from dist/ alike: projectRoot is the
// checkout either way) and answered from memory. The page calls the public check-quota and
// history endpoints of the same origin; nothing here reads a license.

export const DASHBOARD_DIR = path.join(projectRoot, 'src', 'dashboard');
const PAGE = 'index.html';

/**
 * No inline script or style, nothing from elsewhere: a script injected into the page (say,
 * through an organization name) could read the access token typed into it.
 */
export const DASHBOARD_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
  + "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The page never names itself to another site (its URL may carry ?key=). */
const HEADERS: Headers = [
  ['Content-Security-Policy', DASHBOARD_CSP],
  ['Referrer-Policy', 'no-referrer'],
  // the page carries this instance's settings; revalidated, never served stale after a restart
  ['Cache-Control', 'no-cache'],
];

/** The Content-Type of an asset, by its file name's extension. */
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * How often the page asks check-quota again: once per cache window (QUOTA_CACHE_SECONDS;
 * 10 s when the cache is off), and never more than half the per-key rate limit allows, so
 * that a second tab or the web application itself still gets answers.
 */
export function refreshSeconds(config: Pick<Config, 'quotaCacheSeconds' | 'rate'>): number {
  const window = config.quotaCacheSeconds > 0 ? config.quotaCacheSeconds : 10;
  const perMinute = config.rate.checkQuota;
  return Math.max(1, window, perMinute > 0 ? Math.ceil(120 / perMinute) : 0);
}

/** The page with this instance's settings in data- attributes of <body> (read by the script; no inline script). */
export function renderPage(template: string, config: Pick<Config, 'quotaCacheSeconds' | 'rate'>): string {
  const values: Record<string, string> = {
    CACHE_SECONDS: String(config.quotaCacheSeconds),
    REFRESH_SECONDS: String(refreshSeconds(config)),
  };
  const page = template.replace(/\{\{([A-Z_]+)\}\}/g, (whole, name: string) => values[name] ?? whole);
  const left = /\{\{[A-Z_]+\}\}/.exec(page);
  if (left) throw new Error(`src/dashboard/index.html: unknown placeholder ${left[0]}`);
  return page;
}

function fileRoute(urlPath: string, body: Buffer, contentType: string): Route {
  const answer: Reply = rawReply(200, body, contentType, HEADERS);
  return { method: 'get', path: urlPath, errors: codedErrors, answersHead: true, handler: () => answer };
}

/**
 * The dashboard's routes, every answer built here once: the page at /dashboard, and each
 * other file of src/dashboard/ at /dashboard/<name> (a file of another kind stops the start).
 */
export function dashboardRoutes(ctx: RouteContext): Route[] {
  const read = (file: string): Buffer => readFileSync(path.join(DASHBOARD_DIR, file));
  const page = Buffer.from(renderPage(read(PAGE).toString('utf8'), ctx.config));
  const assets = readdirSync(DASHBOARD_DIR).filter((file) => file !== PAGE).sort().map((file) => {
    const type = TYPES[path.extname(file)];
    if (type === undefined) throw new Error(`src/dashboard/${file}: no Content-Type for its extension (src/routes/dashboard.ts TYPES)`);
    return fileRoute(`/dashboard/${file}`, read(file), type);
  });
  return [fileRoute('/dashboard', page, 'text/html; charset=utf-8'), ...assets];
}
