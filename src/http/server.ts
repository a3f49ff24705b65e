import uWS from 'uWebSockets.js';
import type { Logger } from 'pino';
import { ServiceUnavailable } from '../errors.js';
import { HttpMeters } from '../metrics/http.js';
import type { Metrics } from '../metrics/registry.js';
import { answersOf, NOSNIFF, PLAIN, routeHeaders, VARY_ORIGIN, type RequestState } from './answer.js';
import { clientAddress, forwardedFor, peerAddressText } from './clientAddress.js';
import { CorsPolicy } from './cors.js';
import { lingeringOf } from './linger.js';
import { Listener } from './listener.js';
import { LogThrottle } from './logThrottle.js';
import { retryHeaders, type Headers, type Reply, type TransportErrors } from './reply.js';
import type { Request, Route } from './route.js';
import { Router } from './router.js';

// The uWS request lifecycle: a request is routed, its body gathered, its handler run, and
// it is counted in flight until answered or gone, which is what drain waits on. One concern,
// from onRequest to finish; how an answer is written is src/http/answer.ts, the 413 and its
// lingering close src/http/linger.ts. The body is gathered here, in onRequest: its onData
// closure shares the request's scope with onAborted's, where a function of its own would
// allocate a second scope per request.

export interface HttpServerOptions {
  routes: Route[];
  /** how a path no route serves is answered (404) */
  fallbackErrors: TransportErrors;
  tls: { certFile: string; keyFile: string } | null;
  bodyLimit: number;
  /** TRUST_PROXY: how many X-Forwarded-For hops to trust for the client address */
  trustProxy: number;
  /** CORS_ORIGINS; null: no CORS header is ever sent and every preflight is refused */
  cors: CorsPolicy | null;
  log: Logger;
  /** every answer is counted and timed here (GET /metrics) */
  metrics: Metrics;
}

export interface HttpServer {
  listen(host: string, port: number): Promise<number>;
  /** stop accepting, then wait for the requests already accepted to be answered */
  drain(timeoutMs: number): Promise<void>;
  /** close every connection (idle keep-alive ones included) */
  close(): void;
  /**
   * Reads TLS_CERT_FILE and TLS_KEY_FILE again and serves new connections with them; open
   * connections keep the old certificate. Resolves with the new certificate's fingerprint,
   * null without TLS; rejects, still serving the old one, when the files cannot be used.
   */
  reloadTls(): Promise<string | null>;
}

export function createHttpServer(options: HttpServerOptions): HttpServer {
  const router = new Router(options.routes);
  const { log, fallbackErrors } = options;
  const hsts = options.tls !== null;
  const { cors, metrics } = options;
  const fixedHeaders = new Map(options.routes.map((r) => [r, routeHeaders(r, cors !== null)]));
  const meters = new HttpMeters(metrics, options.routes);
  let inFlight = 0;
  let idle: (() => void) | null = null;

  // The request whose handler runs now, for Request.clientAddressNow: one function for all
  // requests, reading the address of the handler running, so a request that does not ask
  // allocates nothing for it. Only the handler's synchronous part may ask.
  let running: uWS.HttpResponse | null = null;
  let runningForwarded = '';
  function addressOfRunning(): string {
    if (running === null) throw new Error('Request.clientAddressNow is read before the handler\'s first await only');
    return clientAddress(peerAddressText(running.getRemoteAddress()), runningForwarded, options.trustProxy);
  }

  /** The client's address as TRUST_PROXY reads it. */
  function addressOf(res: uWS.HttpResponse, uReq: uWS.HttpRequest): string {
    return clientAddress(peerAddressText(res.getRemoteAddress()), options.trustProxy === 0 ? '' : forwardedFor(uReq), options.trustProxy);
  }

  function finish(): void {
    inFlight--;
    if (inFlight === 0 && idle) idle();
  }

  const { writeHead, send, answerOptions } = answersOf(hsts, cors, finish);
  const { refuseBody, endLinger, discard } = lingeringOf(writeHead, finish);

  const failureLog = new LogThrottle(1000);
  /** failures alike for the throttle: same error code, or same first word of the message */
  const failureKind = (err: unknown): string => {
    const e = err as { code?: unknown; message?: unknown };
    return typeof e?.code === 'string' ? e.code : String(e?.message ?? err).split(/[\s:]/, 1)[0] ?? '';
  };

  function run(res: uWS.HttpResponse, state: RequestState, route: Route, req: Request): void {
    let out: Reply | Promise<Reply>;
    running = res;
    runningForwarded = state.forwarded;
    try {
      out = route.handler(req);
    } catch (err) {
      out = Promise.reject(err);
    }
    running = null;
    if (out instanceof Promise) {
      out.then(
        (r) => send(res, state, r),
        (err: unknown) => {
          if (state.gone) return; // nobody to answer, nothing worth a log line (a dropped job)
          metrics.dependencyError(err, 'request');
          const busy = err instanceof ServiceUnavailable;
          const suppressed = failureLog.take(`${route.method} ${route.path} ${failureKind(err)}`);
          if (suppressed >= 0) {
            if (busy) log.warn({ err, path: route.path, suppressed }, 'request refused: service busy');
            else log.error({ err, path: route.path, suppressed }, 'request failed');
          }
          const out = route.errors('SERVICE_UNAVAILABLE');
          send(res, state, { ...out, headers: retryHeaders(busy ? err.retryAfterSeconds : 1) });
        },
      );
    } else {
      send(res, state, out);
    }
  }

  /** A public path's answer to an allowed Origin: its CORS headers (null: CORS off, no Origin, or not allowed). */
  const corsAnswer = (uReq: uWS.HttpRequest): Headers | null => {
    if (cors === null) return null;
    const origin = uReq.getHeader('origin');
    return origin !== '' && cors.allows(origin) ? CorsPolicy.answerHeaders(origin) : null;
  };

  const onRequest = (res: uWS.HttpResponse, uReq: uWS.HttpRequest): void => {
    inFlight++;
    const state: RequestState = {
      done: false, head: false, gone: false, lingering: false, lingerTimer: null, discarded: 0, req: null, fixed: PLAIN, cors: null,
      meter: meters.unmatched, startedAt: metrics.now(), forwarded: '',
    };
    res.onAborted(() => {
      state.gone = true;
      if (state.req) state.req.aborted = true;
      if (state.lingering) {
        endLinger(res, state, false);
      } else if (!state.done) {
        state.done = true;
        finish();
      }
    });
    const path = uReq.getUrl();
    const method = uReq.getMethod();
    state.head = method === 'head';
    const match = router.match(path);
    if (match === null) {
      send(res, state, ((method === 'get' || state.head) && router.slashRedirect(path)) || fallbackErrors('NOT_FOUND'));
      return;
    }
    const { entry, params } = match;
    const route = entry.routes.find((r) => r.method === method || (state.head && r.answersHead === true));
    if (!route) {
      state.meter = meters.otherMethod((entry.routes[0] as Route).path, method);
      // a public path's answers carry the CORS fields, a 405 too: a page is shown it, not an opaque CORS failure
      if (cors !== null && entry.cors) state.fixed = [NOSNIFF, VARY_ORIGIN];
      if (method === 'options' && entry.cors) {
        answerOptions(res, state, entry, uReq.getHeader('origin'));
      } else {
        if (entry.cors) state.cors = corsAnswer(uReq);
        send(res, state, { ...entry.errors('METHOD_NOT_ALLOWED'), headers: [['Allow', entry.allow]] });
      }
      return;
    }
    state.fixed = fixedHeaders.get(route) as Headers;
    state.meter = meters.of(route);
    if (route.cors) state.cors = corsAnswer(uReq);
    const req: Request = {
      method,
      path,
      params,
      query: route.needsQuery ? (uReq.getQuery() ?? '') : '',
      authorization: route.needsAuthorization ? uReq.getHeader('authorization') : '',
      clientAddress: route.needsClientAddress === true ? addressOf(res, uReq) : '',
      clientAddressNow: route.needsClientAddress === 'onDemand' ? addressOfRunning : undefined,
      idempotencyKey: route.needsIdempotencyKey ? uReq.getHeader('idempotency-key') : '',
      accept: route.needsAccept ? uReq.getHeader('accept') : '',
      acceptEncoding: route.needsFileHeaders ? uReq.getHeader('accept-encoding') : '',
      ifNoneMatch: route.needsFileHeaders ? uReq.getHeader('if-none-match') : '',
      body: null,
      aborted: false,
    };
    // X-Forwarded-For now (the request object dies when this returns), the peer when asked
    if (route.needsClientAddress === 'onDemand' && options.trustProxy > 0) state.forwarded = forwardedFor(uReq);
    state.req = req;
    if (method === 'get' || state.head) {
      run(res, state, route, req);
      return;
    }
    const limit = route.bodyLimit ?? options.bodyLimit;
    const tooLarge = (): Reply => route.errors('PAYLOAD_TOO_LARGE');
    // a declared length over the limit is answered before the body arrives
    if (Number(uReq.getHeader('content-length') || '0') > limit) refuseBody(res, state, tooLarge());
    let chunks: Buffer[] | null = null;
    let size = 0;
    res.onData((chunk, isLast) => {
      if (state.lingering) {
        discard(res, state, chunk, isLast);
        return;
      }
      if (state.done) return;
      size += chunk.byteLength;
      if (size > limit) {
        chunks = null;
        refuseBody(res, state, tooLarge());
        if (isLast) endLinger(res, state, true);
        return;
      }
      if (isLast && chunks === null) {
        req.body = Buffer.from(new Uint8Array(chunk)); // copy: uWS frees the chunk on return
        run(res, state, route, req);
        return;
      }
      (chunks ??= []).push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) {
        req.body = Buffer.concat(chunks);
        run(res, state, route, req);
      }
    });
  };
  const listener = new Listener(options.tls, onRequest);

  return {
    listen: (host, port) => listener.listen(host, port),
    drain(timeoutMs) {
      listener.stopAccepting();
      if (inFlight === 0) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
    reloadTls: () => listener.reloadTls(),
    close: () => listener.close(),
  };
}
