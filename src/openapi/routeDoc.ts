import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { Reply } from '../http/reply.js';

// What a route says about itself for /openapi.json (src/openapi/document.ts builds the
// document from these, once, at start). A route's doc sits next to its handler, in its file,
// and reuses the very TypeBox objects its parsers compile, so the document cannot drift from
// what the service checks. Error examples are the route's own pre-rendered replies.

/** One example of a body: a name for the list, and the value. */
export interface Example {
  summary: string;
  value: unknown;
}

/** The answers of one status. */
export interface ResponseDoc {
  description: string;
  schema: TSchema;
  examples: Example[];
  /** the body's media type when it is not JSON (a page, a script) */
  contentType?: string;
  /** headers this answer carries, by name (src/openapi/schemas.ts responseHeaders) */
  headers?: string[];
}

/** A path parameter, query parameter or request header. */
export interface ParamDoc {
  description: string;
  schema: TSchema;
  required?: boolean;
}

export interface RouteDoc {
  summary: string;
  description?: string;
  /** 'public', 'admin', 'operations' or 'documentation': the groups of /docs */
  tags: string[];
  /** who may call it: the admin bearer token, a license's access token, or anyone */
  auth: 'admin' | 'accessToken' | 'none';
  /** each ":param" of the path, by name */
  params?: Record<string, ParamDoc>;
  /** the route's query schema: each property is a query parameter */
  query?: TObject;
  /** request headers the route reads (Authorization is given by `auth`) */
  headers?: Record<string, ParamDoc>;
  /** the route's body schema (the one its bodyParser compiles) and examples of it */
  body?: { schema: TSchema; examples: Example[] };
  /** the name of the limit whose RateLimit-Policy and RateLimit fields every answer carries */
  rateLimit?: string;
  responses: Record<number, ResponseDoc>;
}

/** The body of a pre-rendered JSON reply, as an example. */
export function bodyOf(reply: Reply): unknown {
  return JSON.parse(typeof reply.body === 'string' ? reply.body : Buffer.from(reply.body).toString('utf8'));
}

/** The status code of a reply ("401 Unauthorized" → 401). */
export function statusOf(reply: Reply): number {
  return Number.parseInt(reply.status, 10);
}

/** An answer a route gives: when, the pre-rendered reply, and its schema when not the family's. */
export type Case = readonly [when: string, reply: Reply, schema?: TSchema];

/**
 * Error answers from the route's own reply table, grouped by status: each case is a reply
 * the handler really sends and when it does. `schemaOf` gives the schema of a status from
 * the bodies of its cases (src/openapi/schemas.ts codedErrorOf: the codes they carry); a
 * case of another shape (a 429 of the rate limit) names its own schema.
 */
export function errorResponses(
  schemaOf: (bodies: unknown[]) => TSchema,
  cases: readonly Case[],
  headers: Record<number, string[]> = {},
): Record<number, ResponseDoc> {
  const byStatus = new Map<number, Case[]>();
  for (const c of cases) {
    const status = statusOf(c[1]);
    byStatus.set(status, [...(byStatus.get(status) ?? []), c]);
  }
  const out: Record<number, ResponseDoc> = {};
  for (const [status, list] of byStatus) {
    const family = list.filter((c) => c[2] === undefined).map((c) => bodyOf(c[1]));
    const schemas = [...new Set([...(family.length > 0 ? [schemaOf(family)] : []), ...list.flatMap((c) => (c[2] ? [c[2]] : []))])];
    out[status] = {
      description: list.map(([when]) => when).join('; '),
      schema: schemas.length === 1 ? (schemas[0] as TSchema) : Type.Union(schemas),
      examples: list.map(([when, reply]) => ({ summary: when, value: bodyOf(reply) })),
      ...(headers[status] ? { headers: headers[status] } : {}),
    };
  }
  return out;
}

/** What a page or one of its files is called and answers, for pageDoc and fileDoc. */
export interface StaticDoc {
  summary: string;
  description?: string;
  tag: string;
  example: Example;
  /** the headers its answers carry */
  headers: string[];
}

/** The doc of a page the service serves (/docs, /dashboard): an HTML answer, nothing else. */
export function pageDoc(d: StaticDoc): RouteDoc {
  return {
    summary: d.summary, description: d.description, tags: [d.tag], auth: 'none',
    responses: { 200: { description: 'the HTML page', contentType: 'text/html', schema: Type.String(), examples: [d.example], headers: d.headers } },
  };
}

/**
 * The doc of a page's files at <page>/:asset: the names it serves, each with its own
 * Content-Type, and the 404 (`notFound`, in the route's error family `schemaOf`) of any other.
 */
export function fileDoc(d: StaticDoc, names: string[], notFound: Reply, schemaOf: (bodies: unknown[]) => TSchema): RouteDoc {
  return {
    summary: d.summary, description: d.description, tags: [d.tag], auth: 'none',
    params: { asset: { description: 'the file name, as the page links it', schema: Type.Union(names.map((n) => Type.Literal(n))) } },
    responses: {
      200: { description: 'the file, with its Content-Type', contentType: '*/*', schema: Type.String(), examples: [d.example], headers: d.headers },
      ...errorResponses(schemaOf, [['no such file', notFound]]),
    },
  };
}
