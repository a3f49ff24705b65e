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
// says which of them carry a header when only some do. Two documents are built so: the
// public one (/openapi.json) and the admin API's (/admin/openapi.json), each with the
// components its operations use.

export interface DocumentOptions extends TransportOptions {
  version: string;
  /** which document: the public API's, or the admin API's */
  part: 'public' | 'admin';
}

/** The public document's title: the service's name, as GET / shows it. */
const SERVICE_TITLE = 'License and sign-token service';

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
 * catch-all path, so this answer lives here, under the public document's components,
 * named in both documents' descriptions, and is referenced by every operation that answers
 * exactly it: the file routes for a name they do not serve.
 */
const NOT_FOUND = 'NotFound';

function description(options: DocumentOptions): string {
  const cors = options.cors
    ? 'CORS_ORIGINS is set on this instance: a preflight from one of its origins gets 204 with the CORS headers, one from any other origin 403 `ORIGIN_NOT_ALLOWED`'
    : 'CORS_ORIGINS is not set on this instance: no CORS header is sent and every preflight (OPTIONS with Origin) is 403 `ORIGIN_NOT_ALLOWED`';
  const intro = options.part === 'public'
    ? 'License and single-use signing-token service. The admin API is documented apart, at `/admin/openapi.json` and `/admin/docs` (served with it, for internal addresses only).'
    : 'The admin API of the license and single-use signing-token service: licenses, their quota and packages, their tokens and ledger, the audit log. Served only when `ADMIN_TOKENS` or `ADMIN_TOKEN` is set (every path here is 404 otherwise), and meant for internal addresses only. The public API: `/openapi.json` and `/docs`.';
  const common = `- Paths match case-insensitively: \`/api/License/check-quota/{licenseKey}\` as published is the same resource as the lower-case path shown here.
- Every string the service reads has format \`text\`: no C0 control character (NUL included), no DEL, no lone surrogate; instants (format \`instant\`) are RFC 3339 date-times of a real calendar day between the years 1970 and 9999, as written and once the offset is applied; a \`webhook-url\` is an absolute http or https URL with a host and no user name or password (the \`webhookUrl\` fields say which targets an instance sends to).
- Every answer of an operation is listed on it, with exactly the headers it carries (a header only some answers of a status carry is marked not required, and its description says which): the route's own answers, 405 to a method its path does not serve (\`Allow\` lists those it does; no body for HEAD), 413 to a body over the limit, and 503 with \`Retry-After\` when Redis or Postgres cannot answer in time (nothing changed). On an instance without signing keys (\`SIGNING_KEYS_FILE\` or \`SIGNING_KEYS\` unset), license validation and \`POST /api/Signature/sign\` answer 503 without \`Retry-After\`, naming the setting, and change nothing; every other operation is served.
- Every answer carries \`X-Content-Type-Options: nosniff\` (and \`Strict-Transport-Security\` over HTTPS); the responses below do not repeat them.
- A path no route serves: 404 \`NOT_FOUND\` in the \`{success:false, error:{code, message}}\` shape (\`#/components/responses/${NOT_FOUND}\`${options.part === 'public' ? '' : ' of `/openapi.json`'}; OpenAPI has no operation for a path that does not exist).
- The documentation (its documents, pages and their files) is sent compressed with br or gzip when the request's \`Accept-Encoding\` accepts it (\`Vary: Accept-Encoding\`), each answer with an \`ETag\`: \`If-None-Match\` with it answers 304 without a body while it is current.`;
  const publicOnly = `- The public paths answer CORS preflights (their OPTIONS operations). ${cors}.
- Rate limits count each request that reaches them, accepted or refused. Answers that passed a limit's count carry \`RateLimit-Policy\` and \`RateLimit\`, 200s included: each response that does lists them, with this instance's figures and which of its answers carry which policy; a request refused before any look-up (a malformed body, a token whose signature fails verification) is not counted and carries neither, and a limit set to 0 sends none. Every rate-limit 429 carries \`Retry-After\` in whole seconds, as \`retryAfter\` in its body; check-quota's 429 \`QUOTA_EXCEEDED\` is no rate limit and carries neither (it does carry the RateLimit fields: it was counted).`;
  return `${intro}\n\n${common}${options.part === 'public' ? `\n${publicOnly}` : ''}`;
}

/** Builds the document; throws (naming the route) when a route's doc contradicts its path. */
export function buildDocument(routes: Route[], options: DocumentOptions): BuiltDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  const undocumented: string[] = [];
  const entries = pathEntries(routes);
  const notFound = notFoundResponse(options);
  for (const route of routes) {
    const name = `${route.method.toUpperCase()} ${route.path}`;
    if (!route.doc) {
      undocumented.push(name);
      continue;
    }
    const item = (paths[openApiPath(route.path)] ??= {});
    const entry = entries.get(route.path.toLowerCase()) as PathEntry;
    const op = operation(route, route.doc, entry, options, name);
    item[route.method] = op;
    if (route.answersHead) item.head = headOperation(route, op);
  }
  for (const entry of entries.values()) {
    const item = paths[openApiPath((entry.routes[0] as Route).path)];
    if (entry.cors && item) item.options = preflightOperation(entry, item, options);
  }
  const used = new Set(Object.values(paths).flatMap((item) => Object.values(item)).flatMap((op) => (op as { security: Record<string, unknown>[] }).security.flatMap(Object.keys)));
  const components = {
    schemas: COMPONENTS,
    // the public document's: the admin API's has no operation that answers exactly it, and a component no one uses is an error to Redocly
    responses: options.part === 'public' ? { [NOT_FOUND]: responseObject(notFound, [], 'NOT_FOUND') } : {},
    securitySchemes: Object.fromEntries(Object.entries(SECURITY_SCHEMES).filter(([n]) => used.has(n))),
  };
  const tags = new Set(Object.values(paths).flatMap((item) => Object.values(item)).flatMap((op) => (op as { tags: string[] }).tags));
  const document = {
    openapi: '3.1.0',
    info: { title: options.part === 'public' ? SERVICE_TITLE : `${SERVICE_TITLE}: admin API`, version: options.version, description: description(options) },
    servers: [{ url: '/', description: 'this service' }],
    tags: TAGS.filter((t) => tags.has(t.name)),
    paths,
    components,
  };
  return { document: withUsedSchemas(withResponseReferences(withReferences(document, COMPONENTS))), undocumented };
}

const TAGS = [
  { name: 'public', description: 'The published API, and what the service adds to it (sign-token, history, the ledger, Idempotency-Key)' },
  { name: 'admin', description: 'License administration; served only when ADMIN_TOKENS or ADMIN_TOKEN is set, 404 otherwise' },
  { name: 'operations', description: 'Liveness and readiness probes, metrics' },
  { name: 'documentation', description: 'This document, its reference page and Swagger UI on it (and, in the public one, GET /: where to start)' },
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

function operation(route: Route, doc: RouteDoc, entry: PathEntry, options: DocumentOptions, name: string): Record<string, unknown> {
  const text = [doc.description, ...(doc.rateLimits ?? []).map(limitText)].filter((t) => t).join('\n\n');
  return {
    operationId: operationId(route.method, route.path),
    tags: doc.tags,
    summary: doc.summary,
    ...(text ? { description: text } : {}),
    security: SECURITY[doc.auth],
    parameters: parameters(route, doc, name),
    ...(doc.body ? { requestBody: { required: true, content: { 'application/json': media(doc.body.schema, doc.body.examples) } } } : {}),
    responses: responses(route, doc, entry, options, name),
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
function responses(route: Route, doc: RouteDoc, entry: PathEntry, options: DocumentOptions, name: string): Record<string, unknown> {
  const all: Record<number, ResponseDoc> = { ...doc.responses };
  for (const [status, r] of Object.entries(transportResponses(route, doc, entry, options, name))) all[Number(status)] = merge(all[Number(status)], r);
  const everyAnswer = routeHeaders(route, options);
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

/**
 * Only the component schemas the document refers to, directly or through another
 * component: each document lists those its operations use (the admin API's has no rate-limit
 * error, the public one no License).
 */
function withUsedSchemas(document: Record<string, unknown>): Record<string, unknown> {
  const { components } = document as { components: { schemas: Record<string, unknown> } };
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    for (const [, name] of JSON.stringify(node).matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      if (used.has(name as string)) continue;
      used.add(name as string);
      visit(components.schemas[name as string]);
    }
  };
  visit({ ...document, components: { ...components, schemas: {} } });
  return { ...document, components: { ...components, schemas: Object.fromEntries(Object.entries(components.schemas).filter(([n]) => used.has(n))) } };
}
