import type { RouteDoc } from '../openapi/routeDoc.js';
import type { Reply, TransportErrors } from './reply.js';

// What a route is to the HTTP layer (src/http/server.ts): the contract between the
// transport and the endpoints of src/routes/.

/** What a handler is given: read synchronously from uWS before the request object dies. */
export interface Request {
  method: string;
  path: string;
  params: string[];
  query: string;
  authorization: string;
  /** the client's address (TRUST_PROXY applied), for routes that ask for it; else "" */
  clientAddress: string;
  /**
   * For routes that need it only for some requests (needsClientAddress 'onDemand'): reads it
   * then. Only in the handler's synchronous part, before its first await (it reads the
   * connection of the handler running; it throws when none is).
   */
  clientAddressNow: (() => string) | undefined;
  /** the Idempotency-Key header, for routes that ask for it; "" when absent */
  idempotencyKey: string;
  /** the Accept header, for routes that answer in more than one media type (needsAccept); else "" */
  accept: string;
  /** Accept-Encoding and If-None-Match, for routes that serve files from memory (needsFileHeaders); else "" */
  acceptEncoding: string;
  ifNoneMatch: string;
  /** the raw body, for routes that take one */
  body: Buffer | null;
  /** set when the client has gone: queued work for it can be dropped */
  aborted: boolean;
}

export type Handler = (req: Request) => Reply | Promise<Reply>;

export interface Route {
  method: 'get' | 'post' | 'patch';
  /** a path, matched case-insensitively; ":param" segments capture one segment */
  path: string;
  handler: Handler;
  /** how this endpoint words the failures the HTTP layer answers (all routes of one path share it) */
  errors: TransportErrors;
  bodyLimit?: number;
  /** read the Authorization header and the query string (each read crosses into uWS) */
  needsAuthorization?: boolean;
  needsQuery?: boolean;
  /** 'onDemand': only some of its requests need it (Request.clientAddressNow), and the others do not pay for it */
  needsClientAddress?: boolean | 'onDemand';
  needsIdempotencyKey?: boolean;
  needsAccept?: boolean;
  /** a file from memory (src/http/static.ts): its coding and its 304 depend on Accept-Encoding and If-None-Match */
  needsFileHeaders?: boolean;
  /** a public endpoint: browsers of the CORS_ORIGINS origins may call it */
  cors?: boolean;
  /** its answers carry tokens or private data: Cache-Control: no-store on every one */
  noStore?: boolean;
  /** a GET that HEAD may ask too (a page or its assets): the same answer without a body */
  answersHead?: boolean;
  /** an HTML page with relative links (/docs, /dashboard): its path with a trailing slash, where those links would miss, redirects to it */
  page?: boolean;
  /** what its document says of it (/openapi.json; /admin/openapi.json for the admin API; src/openapi/routeDoc.ts); test/system/openapi.test.ts fails for a route without one */
  doc?: RouteDoc;
}
