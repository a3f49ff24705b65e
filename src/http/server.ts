import uWS from 'uWebSockets.js';
import type { Logger } from 'pino';
import { type ErrorShape, type Reply } from './reply.js';

/** What a handler is given: read synchronously from uWS before the request object dies. */
export interface Request {
  method: string;
  path: string;
  params: string[];
  query: string;
  authorization: string;
  /** the raw body, for routes that take one */
  body: Buffer | null;
}

export type Handler = (req: Request) => Reply | Promise<Reply>;

export interface Route {
  method: 'get' | 'post' | 'patch';
  /** a path, matched case-insensitively; ":param" segments capture one segment */
  path: string;
  handler: Handler;
  errors: ErrorShape;
  bodyLimit?: number;
  /** read the Authorization header and the query string (each read crosses into uWS) */
  needsAuthorization?: boolean;
  needsQuery?: boolean;
}

interface CompiledPath {
  exact: string | null;
  pattern: RegExp | null;
  routes: Route[];
  errors: ErrorShape;
}

export interface HttpServerOptions {
  routes: Route[];
  fallbackErrors: ErrorShape;
  tls: { certFile: string; keyFile: string } | null;
  bodyLimit: number;
  log: Logger;
}

export interface HttpServer {
  listen(host: string, port: number): Promise<number>;
  /** stop accepting, then wait for the requests already accepted to be answered */
  drain(timeoutMs: number): Promise<void>;
  /** close every connection (idle keep-alive ones included) */
  close(): void;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // malformed escapes are left as sent; the handler rejects the value
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';
const HSTS = 'max-age=63072000; includeSubDomains';

function compile(routes: Route[]): { exact: Map<string, CompiledPath>; patterns: CompiledPath[] } {
  const exact = new Map<string, CompiledPath>();
  const patterns: CompiledPath[] = [];
  const byPath = new Map<string, CompiledPath>();
  for (const route of routes) {
    const key = route.path.toLowerCase();
    let entry = byPath.get(key);
    if (!entry) {
      const hasParams = key.includes('/:');
      entry = {
        exact: hasParams ? null : key,
        pattern: hasParams ? new RegExp(`^${key.replace(/:[a-z]+/g, '([^/]+)')}/?$`, 'i') : null,
        routes: [],
        errors: route.errors,
      };
      byPath.set(key, entry);
      if (hasParams) patterns.push(entry);
      else exact.set(key, entry);
    }
    entry.routes.push(route);
  }
  return { exact, patterns };
}

export function createHttpServer(options: HttpServerOptions): HttpServer {
  const { exact, patterns } = compile(options.routes);
  const { log, fallbackErrors } = options;
  const app = options.tls
    ? uWS.SSLApp({ cert_file_name: options.tls.certFile, key_file_name: options.tls.keyFile })
    : uWS.App();
  const hsts = options.tls !== null;
  let inFlight = 0;
  let listenSocket: uWS.us_listen_socket | null = null;
  let idle: (() => void) | null = null;

  function send(res: uWS.HttpResponse, state: { done: boolean }, out: Reply): void {
    if (state.done) return;
    state.done = true;
    res.cork(() => {
      res.writeStatus(out.status).writeHeader('Content-Type', JSON_TYPE);
      if (hsts) res.writeHeader('Strict-Transport-Security', HSTS);
      if (out.headers) for (const [name, value] of out.headers) res.writeHeader(name, value);
      res.end(out.body, out.close === true);
    });
    finish();
  }

  function finish(): void {
    inFlight--;
    if (inFlight === 0 && idle) idle();
  }

  function run(res: uWS.HttpResponse, state: { done: boolean }, route: Route, req: Request): void {
    let out: Reply | Promise<Reply>;
    try {
      out = route.handler(req);
    } catch (err) {
      out = Promise.reject(err);
    }
    if (out instanceof Promise) {
      out.then(
        (r) => send(res, state, r),
        (err: unknown) => {
          log.error({ err, path: route.path }, 'request failed');
          send(res, state, route.errors(503, 'SERVICE_UNAVAILABLE', 'Hizmet geçici olarak kullanılamıyor'));
        },
      );
    } else {
      send(res, state, out);
    }
  }

  app.any('/*', (res, uReq) => {
    inFlight++;
    const state = { done: false };
    res.onAborted(() => {
      if (!state.done) {
        state.done = true;
        finish();
      }
    });
    const path = uReq.getUrl();
    const method = uReq.getMethod();
    let entry = exact.get(path.toLowerCase());
    let params: string[] = [];
    if (!entry) {
      for (const candidate of patterns) {
        const m = candidate.pattern!.exec(path);
        if (m) {
          entry = candidate;
          params = m.slice(1).map(decodeSegment);
          break;
        }
      }
    }
    if (!entry) {
      send(res, state, fallbackErrors(404, 'NOT_FOUND', 'Kaynak bulunamadı'));
      return;
    }
    const route = entry.routes.find((r) => r.method === method);
    if (!route) {
      const allow = entry.routes.map((r) => r.method.toUpperCase()).join(', ');
      const out = entry.errors(405, 'METHOD_NOT_ALLOWED', 'Bu yöntem desteklenmiyor');
      send(res, state, { ...out, headers: [['Allow', allow]] });
      return;
    }
    const req: Request = {
      method,
      path,
      params,
      query: route.needsQuery ? (uReq.getQuery() ?? '') : '',
      authorization: route.needsAuthorization ? uReq.getHeader('authorization') : '',
      body: null,
    };
    if (method === 'get') {
      run(res, state, route, req);
      return;
    }
    const limit = route.bodyLimit ?? options.bodyLimit;
    const tooLarge = (): Reply => ({ ...route.errors(413, 'PAYLOAD_TOO_LARGE', 'İstek gövdesi çok büyük'), close: true });
    const declared = Number(uReq.getHeader('content-length') || '0');
    if (declared > limit) {
      // answered before the client has sent the body; the connection closes after it
      send(res, state, tooLarge());
      return;
    }
    let chunks: Buffer[] | null = null;
    let size = 0;
    res.onData((chunk, isLast) => {
      if (state.done) return;
      size += chunk.byteLength;
      if (size > limit) {
        send(res, state, tooLarge());
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
  });

  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        app.listen(host, port, (socket) => {
          if (!socket) {
            reject(new Error(`cannot listen on ${host}:${port}`));
            return;
          }
          listenSocket = socket;
          resolve(uWS.us_socket_local_port(socket));
        });
      });
    },
    drain(timeoutMs) {
      if (listenSocket) {
        uWS.us_listen_socket_close(listenSocket);
        listenSocket = null;
      }
      if (inFlight === 0) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
    close() {
      // present at run time since uWS v20.12, missing from this build's type definitions
      (app as unknown as { close(): void }).close();
    },
  };
}
