import uWS from 'uWebSockets.js';
import type { RequestMeter } from '../metrics/http.js';
import { CorsPolicy } from './cors.js';
import type { Headers, Reply } from './reply.js';
import type { Request, Route } from './route.js';
import type { PathEntry } from './router.js';

// What the server writes on a response: the status line and the headers every answer
// carries, a handler's Reply, and the answer to OPTIONS. One concern: every answer passes
// through writeHead once, so each is counted, and none lacks nosniff, HSTS or its CORS
// headers. The functions are built once per server (answersOf), closed over its settings:
// a request allocates nothing to be answered.

export interface RequestState {
  /** answered (or gone): nothing more is sent */
  done: boolean;
  /** a HEAD request: its answer has no body */
  head: boolean;
  /** the client went away (uWS onAborted): the response must not be touched */
  gone: boolean;
  lingering: boolean;
  lingerTimer: NodeJS.Timeout | null;
  discarded: number;
  req: Request | null;
  /** the headers every answer of the route carries (routeHeaders) */
  fixed: Headers;
  /** the CORS headers for an allowed Origin, else null */
  cors: Headers | null;
  /** where the answer is counted (/metrics), and when the request arrived (metrics.now()) */
  meter: RequestMeter;
  startedAt: number;
  /** a route whose address is read on demand: X-Forwarded-For as it came (TRUST_PROXY > 0), else "" */
  forwarded: string;
}

export const JSON_TYPE = 'application/json; charset=utf-8';
/** over direct TLS; deploy/nginx's front sends the same (test/system/nginxFront.access.test.ts) */
export const HSTS = 'max-age=63072000; includeSubDomains';
export const NOSNIFF = ['X-Content-Type-Options', 'nosniff'] as const;
const NO_STORE = ['Cache-Control', 'no-store'] as const;
export const VARY_ORIGIN = ['Vary', 'Origin'] as const;
/** what an answer no route made carries (404, 405) */
export const PLAIN: Headers = [NOSNIFF];

// uWS writes a "uWebSockets: 20" header on every answer unless told to be silent; the
// call is undocumented, the one uWebSockets.js itself offers for this (uWS::Loop setSilent)
(uWS as unknown as { _cfg(key: string): void })._cfg('999999990007');

/** The headers every answer of a route carries, built once per route. */
export function routeHeaders(route: Route, cors: boolean): Headers {
  return [NOSNIFF, ...(route.noStore ? [NO_STORE] : []), ...(cors && route.cors ? [VARY_ORIGIN] : [])];
}

export interface Answers {
  /** The status line and every header of an answer but its own (Reply.headers); every answer passes here once, and is counted. */
  writeHead(res: uWS.HttpResponse, state: RequestState, status: string): void;
  send(res: uWS.HttpResponse, state: RequestState, out: Reply): void;
  /**
   * OPTIONS on a public path: a preflight from an allowed origin gets 204 with the CORS
   * headers, one from any other origin 403 in the path's error shape; without an Origin
   * it is a plain OPTIONS: 204 with Allow.
   */
  answerOptions(res: uWS.HttpResponse, state: RequestState, entry: PathEntry, origin: string): void;
}

/** hsts: the server speaks TLS itself; finish: the request is over (it no longer holds a drain). */
export function answersOf(hsts: boolean, cors: CorsPolicy | null, finish: () => void): Answers {
  function writeHead(res: uWS.HttpResponse, state: RequestState, status: string): void {
    state.meter.answered(status, state.startedAt);
    res.writeStatus(status);
    for (const [name, value] of state.fixed) res.writeHeader(name, value);
    if (state.cors) for (const [name, value] of state.cors) res.writeHeader(name, value);
    if (hsts) res.writeHeader('Strict-Transport-Security', HSTS);
  }

  function send(res: uWS.HttpResponse, state: RequestState, out: Reply): void {
    if (state.done) return;
    state.done = true;
    res.cork(() => {
      writeHead(res, state, out.status);
      if (out.noBody !== true) res.writeHeader('Content-Type', out.contentType ?? JSON_TYPE);
      if (out.headers) for (const [name, value] of out.headers) res.writeHeader(name, value);
      if (out.noBody === true) res.endWithoutBody(); // a 304, like a 204: no Content-Length
      else if (state.head) res.end(); // no body (this build's endWithoutBody never completes the response)
      else res.end(out.body);
    });
    finish();
  }

  function answerOptions(res: uWS.HttpResponse, state: RequestState, entry: PathEntry, origin: string): void {
    if (origin !== '' && (cors === null || !cors.allows(origin))) {
      send(res, state, entry.errors('ORIGIN_NOT_ALLOWED'));
      return;
    }
    state.done = true;
    res.cork(() => {
      writeHead(res, state, '204 No Content');
      if (origin === '') res.writeHeader('Allow', entry.allow);
      else for (const [name, value] of CorsPolicy.preflightHeaders(origin, entry.methods)) res.writeHeader(name, value);
      res.endWithoutBody(); // no Content-Length: a 204 has none
    });
    finish();
  }

  return { writeHead, send, answerOptions };
}
