import type { Route } from './route.js';
import { rawReply, type Reply, type TransportErrors } from './reply.js';

/** The routes of one path, and how that path words the failures the HTTP layer answers. */
export interface PathEntry {
  routes: Route[];
  errors: TransportErrors;
  /** the methods the path serves ("POST"), the Access-Control-Allow-Methods of a preflight */
  methods: string;
  /** the Allow header of a 405 and of an OPTIONS answer: the methods, and OPTIONS on CORS paths */
  allow: string;
  /** a public path, open to the origins of CORS_ORIGINS (Route.cors) */
  cors: boolean;
}

export interface Match {
  entry: PathEntry;
  /** the ":param" segments, percent-decoded */
  params: string[];
}

function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment; // a license key as sent: nothing to decode
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // malformed escapes are left as sent; the handler rejects the value
  }
}

const NO_PARAMS: string[] = [];

/**
 * The routes grouped by path (lower case, as matched), in registration order, each path
 * with the failures' wording of its first route, its methods and its Allow header. The
 * router and the document (src/openapi/document.ts) both build on these.
 */
export function pathEntries(routes: readonly Route[]): Map<string, PathEntry> {
  const byPath = new Map<string, PathEntry>();
  for (const route of routes) {
    const key = route.path.toLowerCase();
    let entry = byPath.get(key);
    if (!entry) {
      entry = { routes: [], errors: route.errors, methods: '', allow: '', cors: false };
      byPath.set(key, entry);
    }
    entry.routes.push(route);
    entry.cors ||= route.cors === true;
    entry.methods = entry.routes.flatMap((r) => (r.answersHead ? ['GET', 'HEAD'] : [r.method.toUpperCase()])).join(', ');
    entry.allow = entry.cors ? `${entry.methods}, OPTIONS` : entry.methods;
  }
  return byPath;
}

/**
 * Paths matched case-insensitively: exact paths by one map look-up, paths with ":param"
 * segments (each captures one segment) by their patterns in order. Built once at start.
 */
export class Router {
  /** exact paths, each with its match built once (no allocation per request) */
  private readonly exact = new Map<string, Match>();
  private readonly patterns: { pattern: RegExp; entry: PathEntry }[] = [];
  /** "<page's path>/" -> the redirect to the page (Route.page) */
  private readonly slashed = new Map<string, Reply>();

  constructor(routes: Route[]) {
    for (const [key, entry] of pathEntries(routes)) {
      if (key.includes('/:')) this.patterns.push({ pattern: new RegExp(`^${key.replace(/:[a-z]+/gi, '([^/]+)')}/?$`, 'i'), entry });
      else this.exact.set(key, { entry, params: NO_PARAMS });
      const get = entry.routes.find((r) => r.method === 'get' && r.page === true);
      if (get && !key.includes('/:') && key !== '/') {
        // relative, so that it holds behind a front serving the service under a prefix
        const name = get.path.slice(get.path.lastIndexOf('/') + 1);
        this.slashed.set(`${key}/`, rawReply(308, '', 'text/plain; charset=utf-8', [['Location', `../${name}`], ['Cache-Control', 'public, max-age=86400']]));
      }
    }
  }

  /**
   * A page's path typed or kept with a trailing slash (/docs/): a permanent redirect to the
   * page, rather than the page at the slashed address, where its relative links would miss
   * its files; null for any other path (an API path with a slash stays a 404 in its JSON).
   */
  slashRedirect(path: string): Reply | null {
    return path.endsWith('/') ? this.slashed.get(path.toLowerCase()) ?? null : null;
  }

  match(path: string): Match | null {
    const exact = this.exact.get(path.toLowerCase());
    if (exact) return exact;
    for (const { pattern, entry } of this.patterns) {
      const m = pattern.exec(path);
      if (m) return { entry, params: m.slice(1).map(decodeSegment) };
    }
    return null;
  }
}
