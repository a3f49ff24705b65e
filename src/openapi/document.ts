import { Type, type TSchema } from '@sinclair/typebox';
import type { TransportErrors, TransportFailure } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { codedErrors, messageErrors, timestampedErrors } from '../routes/replies.js';
import { errorResponses, type Example, type ResponseDoc, type RouteDoc } from './routeDoc.js';
import { codedErrorOf, License, MessageError, messageErrorOf, PRESENTED_TOKEN, QuotaExhaustedError, RateLimitedError, responseHeaders, timestampedErrorOf } from './schemas.js';

// The OpenAPI 3.1 document of the routes the server registers, built once at start from
// each route's doc (src/openapi/routeDoc.ts): paths, parameters, bodies and answers from
// the routes' TypeBox schemas and pre-rendered replies, plus the answers the HTTP layer
// gives on every route by itself (503, and 413 where a body is read).

export interface DocumentOptions {
  version: string;
  /** routes documented but not served by this instance (the admin API without ADMIN_TOKEN) */
  unserved?: Route[];
}

export interface BuiltDocument {
  document: Record<string, unknown>;
  /** "GET /path" of every registered route without a doc: left out of the document */
  undocumented: string[];
}

/** How each family of transport errors is shaped (src/routes/replies.ts), for the 503 and 413 every route may answer. */
const TRANSPORT_SCHEMAS = new Map<TransportErrors, (bodies: unknown[]) => TSchema>([
  [codedErrors, codedErrorOf],
  [messageErrors, messageErrorOf],
  [timestampedErrors, (bodies) => timestampedErrorOf(bodies)],
]);

/** Schemas shown once under components and referenced where they occur. */
const COMPONENTS: Record<string, TSchema> = { License, RateLimitedError, QuotaExhaustedError, MessageError };

const DESCRIPTION = `License and single-use signing-token service.

- Paths match case-insensitively: \`/api/License/check-quota/{licenseKey}\` as published is the same resource as the lower-case path shown here.
- Every string the service reads has format \`text\`: no C0 control character (NUL included), no DEL, no lone surrogate; instants (format \`instant\`) are RFC 3339 date-times of a real calendar day between the years 1970 and 9999.
- The public paths answer CORS preflights (OPTIONS) for the origins of \`CORS_ORIGINS\`, and 403 \`ORIGIN_NOT_ALLOWED\` to others.
- A method a path does not serve (HEAD included): 405 with \`Allow\`, in the path's error shape (no body for HEAD); a path no route serves: 404 \`NOT_FOUND\`.
- Rate-limited endpoints send \`RateLimit-Policy\` and \`RateLimit\` on every answer; every 429 carries \`Retry-After\` in seconds.`;

/** Builds the document; throws (naming the route) when a route's doc contradicts its path. */
export function buildDocument(routes: Route[], options: DocumentOptions): BuiltDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  const undocumented: string[] = [];
  for (const [route, served] of [...routes.map((r) => [r, true] as const), ...(options.unserved ?? []).map((r) => [r, false] as const)]) {
    const name = `${route.method.toUpperCase()} ${route.path}`;
    if (!route.doc) {
      undocumented.push(name);
      continue;
    }
    const path = openApiPath(route.path);
    (paths[path] ??= {})[route.method] = operation(route, route.doc, served, name);
  }
  const components = { schemas: COMPONENTS, securitySchemes: SECURITY_SCHEMES };
  const document = {
    openapi: '3.1.0',
    info: { title: 'License and sign-token service', version: options.version, description: DESCRIPTION },
    servers: [{ url: '/', description: 'this service' }],
    tags: TAGS,
    paths,
    components,
  };
  return { document: withReferences(document, COMPONENTS), undocumented };
}

/** "/a/:key/b" → "/a/{key}/b" */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const TAGS = [
  { name: 'public', description: 'The published API (the specification) and its additions (CONTRACT.md)' },
  { name: 'admin', description: 'License administration; served only when ADMIN_TOKEN is set, 404 otherwise' },
  { name: 'operations', description: 'Liveness and readiness probes' },
  { name: 'documentation', description: 'This document and its viewer' },
];

const SECURITY_SCHEMES = {
  adminToken: { type: 'http', scheme: 'bearer', description: 'the ADMIN_TOKEN of the service' },
  accessToken: {
    type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: `the accessToken get-token handed out (15 minutes). ${PRESENTED_TOKEN}`,
  },
};

const SECURITY = { admin: [{ adminToken: [] }], accessToken: [{ accessToken: [] }], none: [] };

function operation(route: Route, doc: RouteDoc, served: boolean, name: string): Record<string, unknown> {
  const notServed = served ? '' : '\n\nNot served by this instance: ADMIN_TOKEN is not set (404).';
  return {
    operationId: operationId(route),
    tags: doc.tags,
    summary: doc.summary,
    ...(doc.description || notServed ? { description: `${doc.description ?? ''}${notServed}`.trim() } : {}),
    security: SECURITY[doc.auth],
    parameters: parameters(route, doc, name),
    ...(doc.body ? { requestBody: { required: true, content: { 'application/json': media(doc.body.schema, doc.body.examples) } } } : {}),
    responses: responses(route, doc, name),
  };
}

/** post /api/v1/auth/get-token → postApiV1AuthGetToken */
function operationId(route: Route): string {
  const words = route.path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return route.method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

function parameters(route: Route, doc: RouteDoc, name: string): unknown[] {
  const names = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] as string);
  const documented = Object.keys(doc.params ?? {});
  if (names.join() !== documented.join()) throw new Error(`${name}: doc.params (${documented.join()}) must name the path parameters (${names.join()})`);
  const out: unknown[] = names.map((p) => ({ name: p, in: 'path', required: true, ...param(doc.params![p]!) }));
  const query = doc.query;
  if (query) {
    for (const [q, schema] of Object.entries(query.properties)) {
      out.push({ name: q, in: 'query', required: (query.required ?? []).includes(q), description: schema.description, schema });
    }
  }
  for (const [h, p] of Object.entries(doc.headers ?? {})) out.push({ name: h, in: 'header', required: p.required ?? false, ...param(p) });
  return out;
}

function param(p: { description: string; schema: TSchema }): { description: string; schema: TSchema } {
  return { description: p.description, schema: p.schema };
}

function media(schema: TSchema, examples: Example[]): Record<string, unknown> {
  return { schema, examples: Object.fromEntries(examples.map((e, i) => [exampleName(e.summary, i), e])) };
}

function exampleName(summary: string, i: number): string {
  const words = summary.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim().split(' ');
  let name = String(i + 1);
  for (const word of words) {
    if (name.length + word.length > 48) break;
    name += `-${word}`;
  }
  return name;
}

/** The route's answers, and the HTTP layer's 503 (a failed handler) and 413 (a body over the limit) in its error shape. */
function responses(route: Route, doc: RouteDoc, name: string): Record<string, unknown> {
  const schemaOf = TRANSPORT_SCHEMAS.get(route.errors);
  if (!schemaOf) throw new Error(`${name}: its errors are none of codedErrors, messageErrors, timestampedErrors; add their schema to TRANSPORT_SCHEMAS (src/openapi/document.ts)`);
  const transport: [string, TransportFailure][] = [['the service cannot answer now (Redis or Postgres unavailable); retry after Retry-After', 'SERVICE_UNAVAILABLE']];
  if (doc.body) transport.unshift(['the body is over the size limit (answered while it is still being sent)', 'PAYLOAD_TOO_LARGE']);
  const added = errorResponses(schemaOf, transport.map(([when, failure]) => [when, route.errors(failure)] as const), { 503: ['Retry-After'] });
  const all = { ...doc.responses };
  for (const [status, extra] of Object.entries(added)) all[Number(status)] = merge(all[Number(status)], extra);
  const out: Record<string, unknown> = {};
  for (const status of Object.keys(all).map(Number).sort((a, b) => a - b)) {
    const r = all[status] as ResponseDoc;
    const headers = [...(r.headers ?? []), ...(doc.rateLimit ? ['RateLimit-Policy', 'RateLimit'] : [])];
    out[String(status)] = {
      description: r.description,
      ...(headers.length > 0 ? { headers: Object.fromEntries(headers.map((h) => [h, header(h, name)])) } : {}),
      content: { [r.contentType ?? 'application/json']: media(r.schema, r.examples) },
    };
  }
  return out;
}

function header(headerName: string, name: string): unknown {
  const h = responseHeaders[headerName];
  if (!h) throw new Error(`${name}: header ${headerName} is not in responseHeaders (src/openapi/schemas.ts)`);
  return { description: h.description, schema: h.schema };
}

/** Two documented answers of one status as one: either body, both sets of examples. */
function merge(a: ResponseDoc | undefined, b: ResponseDoc): ResponseDoc {
  if (!a) return b;
  return {
    description: `${a.description}; ${b.description}`,
    schema: Type.Union([a.schema, b.schema]),
    examples: [...a.examples, ...b.examples],
    headers: [...new Set([...(a.headers ?? []), ...(b.headers ?? [])])],
    ...(a.contentType ? { contentType: a.contentType } : {}),
  };
}

/**
 * A plain JSON copy of the document (TypeBox's symbol keys dropped) where every schema equal
 * to a component but the component itself becomes a $ref to it.
 */
function withReferences(document: Record<string, unknown>, components: Record<string, TSchema>): Record<string, unknown> {
  const refs = new Map(Object.entries(components).map(([n, s]) => [JSON.stringify(s), { $ref: `#/components/schemas/${n}` }]));
  const plain = JSON.parse(JSON.stringify(document)) as Record<string, unknown>;
  const walk = (node: unknown, top: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, false));
    if (node === null || typeof node !== 'object') return node;
    const ref = top ? undefined : refs.get(JSON.stringify(node));
    if (ref) return ref;
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, false)]));
  };
  const { components: comps, ...rest } = plain as { components: { schemas: Record<string, unknown> } } & Record<string, unknown>;
  const schemas = Object.fromEntries(Object.entries(comps.schemas).map(([n, s]) => [n, walk(s, true)]));
  return { ...walk(rest, false) as Record<string, unknown>, components: { ...comps, schemas } };
}
