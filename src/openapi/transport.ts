import { Type, type TSchema } from '@sinclair/typebox';
import { CorsPolicy } from '../http/cors.js';
import { retryHeaders, type Reply, type TransportErrors } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { PathEntry } from '../http/router.js';
import { EXAMPLE } from './examples.js';
import { responseObject } from './responses.js';
import { describeCases, errorResponses, NOT_FOUND_WHEN, type Case, type HeaderUse, type ResponseDoc, type RouteDoc } from './routeDoc.js';

// What the HTTP layer (src/http/server.ts) answers by itself, in the document: the 405,
// 413 and 503 of each route in its path's error shape, the headers every answer of a route
// carries, HEAD where a GET answers it, the CORS preflight of a public path, and the 404 of
// a path no route serves.

/**
 * The schema of each family of transport errors (a Route's errors) the routes answer in.
 * The families are the routes' wording (src/routes/replies.ts), so the routes hand them in:
 * this layer knows no route.
 */
export type ErrorSchemas = ReadonlyMap<TransportErrors, (bodies: unknown[]) => TSchema>;

/** What the document says of the HTTP layer's settings. */
export interface TransportOptions {
  /** CORS_ORIGINS is set: preflights from its origins are answered 204 (src/http/cors.ts) */
  cors: boolean;
  /** BODY_LIMIT_BYTES: the body limit of a route without one of its own */
  bodyLimit: number;
  /** every family a documented route's errors may be */
  errorSchemas: ErrorSchemas;
  /** the family a path no route serves answers in (the HTTP layer's fallbackErrors) */
  fallbackErrors: TransportErrors;
}

/** "/a/:key/b" → "/a/{key}/b" */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** post /api/v1/auth/get-token → postApiV1AuthGetToken */
export function operationId(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

/** The schema family of a route's failures. */
function schemaOfErrors(errors: TransportErrors, options: TransportOptions, name: string): (bodies: unknown[]) => TSchema {
  const schemaOf = options.errorSchemas.get(errors);
  if (!schemaOf) throw new Error(`${name}: its errors (Route.errors) are a family with no schema; add it to ERROR_SCHEMAS (src/routes/docs.ts)`);
  return schemaOf;
}

/**
 * A transport failure's reply as the document shows it, with its headers; a timestamped one
 * (check-quota's family) stamped with the examples' time rather than the start's, so that
 * every process and every start serve the same document (and ETag).
 */
function asExample(reply: Reply, headers = reply.headers): Reply {
  const body = JSON.parse(reply.body as string) as Record<string, unknown>;
  return { ...reply, ...('timestamp' in body ? { body: JSON.stringify({ ...body, timestamp: EXAMPLE.now }) } : {}), headers };
}

/** The 404 of a path no route serves (components.responses.NotFound). */
export function notFoundResponse(options: TransportOptions): ResponseDoc {
  const schemaOf = schemaOfErrors(options.fallbackErrors, options, 'a path no route serves');
  return errorResponses(schemaOf, [[NOT_FOUND_WHEN, options.fallbackErrors('NOT_FOUND')]])[404] as ResponseDoc;
}

/**
 * The HTTP layer's answers on a route it serves: 405 to a method its path does not serve,
 * 413 to a body over the limit (every method but GET reads one), 503 when the handler fails.
 */
export function transportResponses(route: Route, doc: RouteDoc, entry: PathEntry, options: TransportOptions, name: string): Record<number, ResponseDoc> {
  if (entry.errors !== route.errors) throw new Error(`${name}: every route of a path words its failures alike (Route.errors)`);
  const cases: Case[] = [[`a method this path does not serve (it serves ${entry.allow}); no body for HEAD`, asExample(route.errors('METHOD_NOT_ALLOWED'), [['Allow', entry.allow]])]];
  if (route.method !== 'get') {
    const limit = route.bodyLimit ?? options.bodyLimit;
    const setting = route.bodyLimit === undefined ? 'BODY_LIMIT_BYTES' : route.path.startsWith('/admin/') ? 'the admin API\'s limit' : 'this endpoint\'s limit';
    // no Connection header here: HTTP/2 forbids it, and a front speaking HTTP/2 to the client drops it
    cases.push([`the body is over ${limit} bytes (${setting}): answered as soon as Content-Length or the bytes received pass it, while the client may ` +
      'still be sending; over HTTP/1.1 the connection is then closed', asExample(route.errors('PAYLOAD_TOO_LARGE'))]);
  }
  if (!doc.neverUnavailable) {
    cases.push(['the service cannot answer now (Redis or Postgres unavailable or slower than its timeout, or too busy): nothing changed; retry after Retry-After',
      asExample(route.errors('SERVICE_UNAVAILABLE'), retryHeaders(1))]);
  }
  return errorResponses(schemaOfErrors(route.errors, options, name), cases);
}

/** The headers every answer of a route carries (src/http/answer.ts routeHeaders, and the CORS ones of an allowed Origin). */
export function routeHeaders(route: Route, options: TransportOptions): { name: string; value?: string; when?: string }[] {
  const allowed = 'a request whose Origin is one of CORS_ORIGINS';
  const [, exposed] = CorsPolicy.answerHeaders('https://origin.example');
  return [
    ...(route.noStore ? [{ name: 'Cache-Control', value: 'no-store' }] : []),
    ...(options.cors && route.cors
      ? [{ name: 'Vary', value: 'Origin' }, { name: 'Access-Control-Allow-Origin', when: allowed }, { name: 'Access-Control-Expose-Headers', value: exposed?.[1], when: allowed }]
      : []),
  ];
}

/**
 * HEAD of a route that answers it (a page, its files): the GET's answers without a body,
 * with the same headers. 405, 413 and 503 come from the GET it mirrors.
 */
export function headOperation(route: Route, get: Record<string, unknown>): Record<string, unknown> {
  const responses = get.responses as Record<string, { description: string; headers?: unknown }>;
  return {
    ...get,
    operationId: operationId('head', route.path),
    summary: `${get.summary as string}: headers only`,
    description: 'The same status and headers as GET, without a body.',
    responses: Object.fromEntries(Object.entries(responses).map(([status, r]) => [status, {
      description: `${r.description}${status === '405' ? '' : ' (no body)'}`,
      ...(r.headers ? { headers: r.headers } : {}),
    }])),
  };
}

/**
 * OPTIONS of a public path (src/http/answer.ts answerOptions): a preflight from an allowed
 * origin gets 204 with the CORS headers, one from another origin (or any, with CORS off)
 * 403 ORIGIN_NOT_ALLOWED in the path's error shape; without Origin, 204 with Allow. The
 * path's parameters are not read: any segment is answered alike.
 */
export function preflightOperation(entry: PathEntry, item: Record<string, unknown>, options: TransportOptions): Record<string, unknown> {
  const route = entry.routes[0] as Route;
  const schemaOf = schemaOfErrors(entry.errors, options, `OPTIONS ${route.path}`);
  const allowed = CorsPolicy.preflightHeaders('https://origin.example', entry.methods);
  const vary: HeaderUse[] = options.cors ? [{ name: 'Vary', value: 'Origin' }] : [];
  const granted = 'a preflight from an origin of CORS_ORIGINS';
  const plain = 'a plain OPTIONS without Origin';
  const ok: ResponseDoc = {
    description: options.cors ? describeCases([granted, plain]) : `${plain} (CORS is off on this instance: every preflight is 403)`,
    schema: Type.Null(),
    examples: [],
    headers: [
      { name: 'Allow', value: entry.allow, ...(options.cors ? { when: plain } : {}) },
      ...(options.cors ? allowed.map(([name, value]): HeaderUse => ({ name, when: granted, ...(name === 'Access-Control-Allow-Origin' ? {} : { value }) })) : []),
      ...vary,
    ],
  };
  const refused = errorResponses(schemaOf, [[options.cors ? 'a preflight from an origin not in CORS_ORIGINS' : 'any preflight (Origin sent): CORS_ORIGINS is not set',
    asExample(entry.errors('ORIGIN_NOT_ALLOWED'))]])[403] as ResponseDoc;
  const path = openApiPath(route.path);
  const names = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] as string);
  const { headers: okHeaders, description: okDescription } = responseObject(ok, [], path) as { headers: unknown; description: string };
  const methods = Object.keys(item).filter((m) => m !== 'options').map((m) => m.toUpperCase()).join(', ');
  return {
    operationId: operationId('options', route.path),
    tags: ['public'],
    summary: `CORS preflight of ${methods} ${path}`,
    description: `Browsers send it before a cross-origin ${methods} with JSON or an Authorization header. Allowed origins: CORS_ORIGINS (docs/api.md#cors).`,
    security: [],
    parameters: [
      ...names.map((p) => ({ name: p, in: 'path', required: true, description: 'any value: a preflight does not read it', schema: { type: 'string' } })),
      { name: 'Origin', in: 'header', required: false, description: 'the page\'s origin (scheme://host[:port]); without it this is a plain OPTIONS', schema: { type: 'string' } },
    ],
    responses: {
      204: { description: okDescription, headers: okHeaders },
      403: responseObject({ ...refused, headers: [...(refused.headers ?? []), ...vary] }, [], path),
    },
  };
}
