import type { TSchema } from '@sinclair/typebox';
import type { Route } from '../http/route.js';
import { pathEntries, type PathEntry } from '../http/router.js';
import { media, merge, responseObject, WINDOW_SECONDS } from './responses.js';
import type { RateLimitDoc, ResponseDoc, RouteDoc } from './routeDoc.js';
import { License, MessageError, PRESENTED_TOKEN, QuotaExhaustedError, RateLimitedError } from './schemas.js';
import {
  headOperation, notFoundResponse, openApiPath, operationId, preflightOperation, routeHeaders, transportResponses, type TransportOptions,
} from './transport.js';

// The OpenAPI 3.1 document of the routes the server registers, built once at start from
// each route's doc (src/openapi/routeDoc.ts): paths, parameters, bodies and answers from
// the routes' TypeBox schemas and pre-rendered replies, plus every answer the HTTP layer
// (src/http/server.ts) gives by itself, in the path's error shape: 405 to a method the
// path does not serve, 413 to a body over the limit, 503 when a handler fails, the CORS
// preflight (OPTIONS) of the public paths, HEAD where a GET answers it, and 404 for a
// path no route serves. Each response lists exactly the headers its answers carry, and
// says which of them carry a header when only some do.

export interface DocumentOptions extends TransportOptions {
  version: string;
  /** routes documented but not served by this instance (the admin API without ADMIN_TOKEN) */
  unserved?: Route[];
}

export interface BuiltDocument {
  document: Record<string, unknown>;
  /** "GET /path" of every registered route without a doc: left out of the document */
  undocumented: string[];
}

/** Schemas shown once under components and referenced where they occur. */
const COMPONENTS: Record<string, TSchema> = { License, RateLimitedError, QuotaExhaustedError, MessageError };

/**
 * A path no route serves answers 404 NOT_FOUND in the coded shape (the fallback of
 * src/http/server.ts). OpenAPI describes operations of paths that exist and has no
 * catch-all path, so this answer lives here, under components, named in the document's
 * description, and is referenced by every operation that answers exactly it: the file
 * routes for a name they do not serve, and the admin API when this instance does not serve it.
 */
const NOT_FOUND = 'NotFound';

function description(options: DocumentOptions): string {
  const cors = options.cors
    ? 'CORS_ORIGINS is set on this instance: a preflight from one of its origins gets 204 with the CORS headers, one from any other origin 403 `ORIGIN_NOT_ALLOWED`'
    : 'CORS_ORIGINS is not set on this instance: no CORS header is sent and every preflight (OPTIONS with Origin) is 403 `ORIGIN_NOT_ALLOWED`';
  return `License and single-use signing-token service.

- Paths match case-insensitively: \`/api/License/check-quota/{licenseKey}\` as published is the same resource as the lower-case path shown here.
- Every string the service reads has format \`text\`: no C0 control character (NUL included), no DEL, no lone surrogate; instants (format \`instant\`) are RFC 3339 date-times of a real calendar day between the years 1970 and 9999; a \`webhook-url\` is an absolute http or https URL with a host and no user name or password (the \`webhookUrl\` fields say which targets an instance sends to).
- Every answer of an operation is listed on it, with exactly the headers it carries (a header only some answers of a status carry is marked not required, and its description says which): the route's own answers, 405 to a method its path does not serve (\`Allow\` lists those it does; no body for HEAD), 413 to a body over the limit, and 503 with \`Retry-After\` when Redis or Postgres cannot answer in time (nothing changed). On an instance without signing keys (\`SIGNING_KEYS_FILE\` or \`SIGNING_KEYS\` unset), license validation and \`POST /api/Signature/sign\` answer 503 without \`Retry-After\`, naming the setting, and change nothing; every other operation is served.
- Every answer carries \`X-Content-Type-Options: nosniff\` (and \`Strict-Transport-Security\` over HTTPS); the responses below do not repeat them.
- A path no route serves: 404 \`NOT_FOUND\` in the \`{success:false, error:{code, message}}\` shape (\`#/components/responses/${NOT_FOUND}\`; OpenAPI has no operation for a path that does not exist).
- The public paths answer CORS preflights (their OPTIONS operations). ${cors}.
- Rate limits count each request that reaches them, accepted or refused. Answers that passed a limit's count carry \`RateLimit-Policy\` and \`RateLimit\`, 200s included: each response that does lists them, with this instance's figures and which of its answers carry which policy; a request refused before any look-up (a malformed body, a token whose signature fails verification) is not counted and carries neither, and a limit set to 0 sends none. Every rate-limit 429 carries \`Retry-After\` in whole seconds, as \`retryAfter\` in its body; check-quota's 429 \`QUOTA_EXCEEDED\` is no rate limit and carries neither (it does carry the RateLimit fields: it was counted).`;
}

/** Builds the document; throws (naming the route) when a route's doc contradicts its path. */
export function buildDocument(routes: Route[], options: DocumentOptions): BuiltDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  const undocumented: string[] = [];
  const entries = pathEntries(routes);
  const notFound = notFoundResponse();
  for (const [route, served] of [...routes.map((r) => [r, true] as const), ...(options.unserved ?? []).map((r) => [r, false] as const)]) {
    const name = `${route.method.toUpperCase()} ${route.path}`;
    if (!route.doc) {
      undocumented.push(name);
      continue;
    }
    const item = (paths[openApiPath(route.path)] ??= {});
    const entry = served ? (entries.get(route.path.toLowerCase()) as PathEntry) : null;
    const op = operation(route, route.doc, entry, options, name, notFound);
    item[route.method] = op;
    if (entry && route.answersHead) item.head = headOperation(route, op);
  }
  for (const entry of entries.values()) {
    const item = paths[openApiPath((entry.routes[0] as Route).path)];
    if (entry.cors && item) item.options = preflightOperation(entry, item, options);
  }
  const used = new Set(Object.values(paths).flatMap((item) => Object.values(item)).flatMap((op) => (op as { security: Record<string, unknown>[] }).security.flatMap(Object.keys)));
  const components = {
    schemas: COMPONENTS,
    responses: { [NOT_FOUND]: responseObject(notFound, [], 'NOT_FOUND') },
    securitySchemes: Object.fromEntries(Object.entries(SECURITY_SCHEMES).filter(([n]) => used.has(n))),
  };
  const document = {
    openapi: '3.1.0',
    info: { title: 'License and sign-token service', version: options.version, description: description(options) },
    servers: [{ url: '/', description: 'this service' }],
    tags: TAGS,
    paths,
    components,
  };
  return { document: withResponseReferences(withReferences(document, COMPONENTS)), undocumented };
}

const TAGS = [
  { name: 'public', description: 'The published API, and what the service adds to it (sign-token, history, the ledger, Idempotency-Key)' },
  { name: 'admin', description: 'License administration; served only when ADMIN_TOKENS or ADMIN_TOKEN is set, 404 otherwise' },
  { name: 'operations', description: 'Liveness and readiness probes, metrics' },
  { name: 'documentation', description: 'This document and its viewer' },
  { name: 'dashboard', description: 'The quota dashboard, a page for license holders' },
];

const SECURITY_SCHEMES = {
  adminToken: { type: 'http', scheme: 'bearer', description: 'an admin token of the service: one of ADMIN_TOKENS, or ADMIN_TOKEN' },
  accessToken: {
    type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: `the accessToken get-token handed out (15 minutes). ${PRESENTED_TOKEN}`,
  },
  metricsToken: { type: 'http', scheme: 'bearer', description: 'the METRICS_TOKEN of the service' },
};

const SECURITY = { admin: [{ adminToken: [] }], accessToken: [{ accessToken: [] }], metricsToken: [{ metricsToken: [] }], none: [] };

function operation(route: Route, doc: RouteDoc, entry: PathEntry | null, options: DocumentOptions, name: string, notFound: ResponseDoc): Record<string, unknown> {
  const notServed = entry ? '' : 'Not served by this instance: ADMIN_TOKEN is not set (nor ADMIN_TOKENS), so every request to this path is 404 `NOT_FOUND` (the other answers listed are those of an instance that serves it).';
  const text = [doc.description, ...(doc.rateLimits ?? []).map(limitText), notServed].filter((t) => t).join('\n\n');
  return {
    operationId: operationId(route.method, route.path),
    tags: doc.tags,
    summary: doc.summary,
    ...(text ? { description: text } : {}),
    security: SECURITY[doc.auth],
    parameters: parameters(route, doc, name),
    ...(doc.body ? { requestBody: { required: true, content: { 'application/json': media(doc.body.schema, doc.body.examples) } } } : {}),
    responses: responses(route, doc, entry, options, name, notFound),
  };
}

/** What a limit means on this instance, for the operation's description. */
function limitText(l: RateLimitDoc): string {
  return l.limit > 0
    ? `Limit "${l.policy}": ${l.limit} requests per ${WINDOW_SECONDS} s per ${l.per} (${l.setting}). The responses whose answers carry its \`RateLimit-Policy\` and \`RateLimit\` fields list them, and say which answers do.`
    : `Limit "${l.policy}" is off on this instance (${l.setting}=0): no answer carries its RateLimit fields.`;
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

/**
 * The route's answers and the HTTP layer's, each status with its headers. 405 is listed on
 * every operation of a path: it is what the path answers to any other method, and OpenAPI
 * has no place for answers to methods a path does not define but its operations (listing
 * each missing method as an operation of its own would put seven false operations per path
 * in /docs, each a "Try it out" that only fails).
 */
function responses(route: Route, doc: RouteDoc, entry: PathEntry | null, options: DocumentOptions, name: string, notFound: ResponseDoc): Record<string, unknown> {
  const all: Record<number, ResponseDoc> = { ...doc.responses };
  const extra = entry ? transportResponses(route, doc, entry, options, name) : { 404: notFound };
  for (const [status, r] of Object.entries(extra)) all[Number(status)] = merge(all[Number(status)], r);
  const everyAnswer = entry ? routeHeaders(route, options) : [];
  const out: Record<string, unknown> = {};
  for (const status of Object.keys(all).map(Number).sort((a, b) => a - b)) {
    const r = all[status] as ResponseDoc;
    // a 405 is the path's, not the route's: it carries none of the route's own headers
    const own = new Set((r.headers ?? []).map((u) => (typeof u === 'string' ? u : u.name)));
    const headers = status === 405 ? r.headers : [...(r.headers ?? []), ...everyAnswer.filter((u) => !own.has(u.name))];
    out[String(status)] = responseObject({ ...r, ...(headers && headers.length > 0 ? { headers } : {}) }, doc.rateLimits ?? [], name, status);
  }
  return out;
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

/** Every operation's response equal to a component response becomes a $ref to it. */
function withResponseReferences(document: Record<string, unknown>): Record<string, unknown> {
  const { paths, components } = document as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>>; components: { responses: Record<string, unknown> } };
  const refs = new Map(Object.entries(components.responses).map(([n, r]) => [JSON.stringify(r), { $ref: `#/components/responses/${n}` }]));
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item)) {
      for (const [status, r] of Object.entries(op.responses)) op.responses[status] = refs.get(JSON.stringify(r)) ?? r;
    }
  }
  return document;
}
