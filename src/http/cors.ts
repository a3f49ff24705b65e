import { domainToASCII } from 'node:url';
import type { Headers } from './reply.js';

// CORS (docs/api.md#cors). CORS_ORIGINS lists the browser
// origins allowed to call the public endpoints, with the wildcard rule of license domains:
// "https://*.ornek.com.tr" allows every origin below ornek.com.tr over https on the default
// port, never ornek.com.tr itself. An origin is scheme, host and port, compared exactly
// (host names case-insensitively, internationalised names in their ASCII form); "*" allows
// every origin. The answers carry no credentials (no cookies are used), so an allowed
// origin is echoed back and no Access-Control-Allow-Credentials is ever sent.

interface OriginRule {
  scheme: string;
  /** ASCII, lower case; for a wildcard rule the domain below which origins match */
  host: string;
  wildcard: boolean;
  /** the port, the scheme's default one filled in */
  port: number;
}

const DEFAULT_PORTS: Record<string, number> = { http: 80, https: 443 };

/** scheme://host[:port] as browsers send it in Origin (no path, no user info). */
const ORIGIN = /^(https?):\/\/([^/:@?#[\]\s]+|\[[0-9a-fA-F:.]+\])(?::(\d{1,5}))?$/;
/** a CORS_ORIGINS entry: an origin whose host may start with "*.", a trailing "/" tolerated */
const ENTRY = /^(https?):\/\/(\*\.)?([^/:@?#[\]\s*]+|\[[0-9a-fA-F:.]+\])(?::(\d{1,5}))?\/?$/i;

function portOf(scheme: string, port: string | undefined): number | null {
  if (port === undefined) return DEFAULT_PORTS[scheme] as number;
  const n = Number(port);
  return n >= 1 && n <= 65535 ? n : null;
}

/**
 * The rules of CORS_ORIGINS ("" or unset: none, CORS off), or the reason an entry is
 * not an origin (the configuration refuses to start with it).
 */
export function parseCorsOrigins(raw: string): { any: boolean; rules: OriginRule[] } | string {
  const rules: OriginRule[] = [];
  let any = false;
  for (const text of raw.split(',').map((e) => e.trim()).filter((e) => e !== '')) {
    if (text === '*') {
      any = true;
      continue;
    }
    const m = ENTRY.exec(text);
    const scheme = m?.[1]?.toLowerCase() ?? '';
    const host = m ? domainToASCII((m[3] as string).toLowerCase()) : '';
    const port = m ? portOf(scheme, m[4]) : null;
    if (!m || host === '' || port === null) {
      return `"${text}" is not an origin: scheme://host[:port], http or https, the host may start with "*."`;
    }
    rules.push({ scheme, host, wildcard: m[2] !== undefined, port });
  }
  return { any, rules };
}

const EXPOSED = 'Retry-After, RateLimit, RateLimit-Policy';
const ALLOWED_HEADERS = 'Content-Type, Authorization, Idempotency-Key';
/** Chromium caps the preflight cache at two hours; a removed origin is refused on its real requests anyway. */
const MAX_AGE_SECONDS = '7200';

/** The allowed origins, matched per request; the header sets are built per origin from constants. */
export class CorsPolicy {
  constructor(private readonly allowed: { any: boolean; rules: OriginRule[] }) {}

  /** Whether an Origin header names an allowed origin ("" and "null", the opaque origin, never do). */
  allows(origin: string): boolean {
    const m = ORIGIN.exec(origin);
    if (m === null) return false;
    if (this.allowed.any) return true;
    const scheme = m[1] as string;
    const host = (m[2] as string).toLowerCase();
    const port = portOf(scheme, m[3]);
    for (const rule of this.allowed.rules) {
      if (rule.scheme !== scheme || rule.port !== port) continue;
      if (rule.wildcard ? host.length > rule.host.length + 1 && host.endsWith(`.${rule.host}`) : host === rule.host) return true;
    }
    return false;
  }

  /** The headers of an answer to an allowed origin. */
  static answerHeaders(origin: string): Headers {
    return [['Access-Control-Allow-Origin', origin], ['Access-Control-Expose-Headers', EXPOSED]];
  }

  /** The headers of a 204 to an allowed origin's preflight; methods: what the path serves. */
  static preflightHeaders(origin: string, methods: string): Headers {
    return [
      ['Access-Control-Allow-Origin', origin],
      ['Access-Control-Allow-Methods', methods],
      ['Access-Control-Allow-Headers', ALLOWED_HEADERS],
      ['Access-Control-Max-Age', MAX_AGE_SECONDS],
    ];
  }
}
