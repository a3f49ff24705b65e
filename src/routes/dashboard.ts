import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { rawReply, type Headers } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { fileDoc, pageDoc } from '../openapi/routeDoc.js';
import { codedErrorOf } from '../openapi/schemas.js';
import { projectRoot } from '../paths.js';
import type { RouteContext } from './context.js';
import { codedErrors } from './replies.js';

// GET /dashboard: the quota dashboard, a page, its scripts, style sheet and icon, read from
// src/dashboard/ once at start (from the source tree and from dist/ alike: projectRoot is the
// checkout either way) and answered from memory. The page calls the public check-quota,
// history and ledger endpoints of the same origin; nothing here reads a license.

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
 * How often the page asks check-quota (and, given an access token, history and the ledger)
 * again: once per cache window (QUOTA_CACHE_SECONDS; 10 s when the cache is off), and never
 * more than half of either rate limit allows (check-quota's per key and client address;
 * history's per license, which the ledger shares, at a history page and a ledger page a
 * refresh), so that a second tab or the web application itself still gets answers.
 */
export function refreshSeconds(config: Pick<Config, 'quotaCacheSeconds' | 'rate'>): number {
  const window = config.quotaCacheSeconds > 0 ? config.quotaCacheSeconds : 10;
  /** seconds between refreshes that spend half of `perMinute` at `each` requests a refresh */
  const halfOf = (perMinute: number, each: number): number => (perMinute > 0 ? Math.ceil((120 * each) / perMinute) : 0);
  return Math.max(1, window, halfOf(config.rate.checkQuota, 1), halfOf(config.rate.history, 2));
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

const notFound = codedErrors('NOT_FOUND');

const DASHBOARD_PAGE_DOC = pageDoc({
  summary: 'The quota dashboard (a page for license holders)',
  description: 'A license key shows its quota, expiry and status (check-quota); an access token adds its redemptions '
    + '(history) and its packages with their expiry, purchases and forfeits (ledger). Plain HTML and scripts from this service only (Content-Security-Policy); answers HEAD too.',
  tag: 'dashboard',
  example: { summary: 'the page', value: '<!doctype html>\n<html lang="tr">…<main id="dashboard">…</main>…</html>' },
  headers: ['Cache-Control', 'Content-Security-Policy'],
});

const DASHBOARD_FILE_DOC = {
  summary: 'A file of the dashboard page (script, style sheet, icon)',
  tag: 'dashboard',
  example: { summary: 'a style sheet', value: 'body { … }' },
  headers: ['Cache-Control', 'Content-Security-Policy'],
};

/**
 * The dashboard's routes, every answer built here once: the page at /dashboard, and each
 * other file of src/dashboard/ at /dashboard/<name> (a file of another kind stops the start).
 * No file is read by request path: a name is looked up among those read at start.
 */
export function dashboardRoutes(ctx: RouteContext): Route[] {
  const read = (file: string): Buffer => readFileSync(path.join(DASHBOARD_DIR, file));
  const page = rawReply(200, Buffer.from(renderPage(read(PAGE).toString('utf8'), ctx.config)), 'text/html; charset=utf-8', HEADERS);
  const assets = new Map(readdirSync(DASHBOARD_DIR).filter((file) => file !== PAGE).sort().map((file) => {
    const type = TYPES[path.extname(file)];
    if (type === undefined) throw new Error(`src/dashboard/${file}: no Content-Type for its extension (src/routes/dashboard.ts TYPES)`);
    return [file, rawReply(200, read(file), type, HEADERS)] as const;
  }));
  return [
    { method: 'get', path: '/dashboard', errors: codedErrors, answersHead: true, page: true, doc: DASHBOARD_PAGE_DOC, handler: () => page },
    {
      method: 'get', path: '/dashboard/:asset', errors: codedErrors, answersHead: true, doc: fileDoc(DASHBOARD_FILE_DOC, [...assets.keys()], notFound, codedErrorOf),
      handler: (req) => assets.get(req.params[0] ?? '') ?? notFound,
    },
  ];
}
