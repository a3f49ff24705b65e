import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { Reply } from '../http/reply.js';

// What a route says about itself for its document, /openapi.json or /admin/openapi.json
// (src/openapi/document.ts builds the documents from these, once, at start). A route's doc
// sits next to its handler, in its file, and reuses the very TypeBox objects its parsers
// compile, so the document cannot drift from what the service checks. Error examples are
// the route's own pre-rendered replies.

/** One example of a body: a name for the list, and the value. */
export interface Example {
  summary: string;
  value: unknown;
}

/**
 * A header an answer carries: its name when every answer of the status carries it, else
 * its name and which answers do (`when`, a phrase). `value`: the one value it always has.
 */
export type HeaderUse = string | { name: string; when?: string; value?: string };

/** The answers of one status. */
export interface ResponseDoc {
  description: string;
  schema: TSchema;
  examples: Example[];
  /** the body's media type when it is not JSON (a page, a script) */
  contentType?: string;
  /** the same answer in other media types, which the request's Accept chooses (GET /: a page for browsers) */
  otherMedia?: { contentType: string; schema: TSchema; examples: Example[] }[];
  /** headers this answer carries (their descriptions: src/openapi/schemas.ts responseHeaders) */
  headers?: HeaderUse[];
  /** how errorResponses made the schema, so two answers of one status merge into one family schema */
  parts?: SchemaParts;
  /** no body at all (a 304): schema and examples are not shown */
  noBody?: true;
}

/** A status's schema as errorResponses builds it: the family's schema of its bodies, and the cases' own schemas. */
export interface SchemaParts {
  schemaOf: (bodies: unknown[]) => TSchema;
  family: unknown[];
  own: TSchema[];
}

/** The schema of the parts: one of the family's (all its bodies' codes at once) and the cases' own. */
export function schemaOfParts(p: SchemaParts): TSchema {
  return oneOf([...new Set([...(p.family.length > 0 ? [p.schemaOf(p.family)] : []), ...p.own])]);
}

/**
 * A rate limit whose RateLimit-Policy and RateLimit fields a route's answers carry
 * (src/routes/rateLimitFields.ts): the answers that passed its count, never those refused
 * before it. The document lists the fields on exactly the statuses named here, with the
 * figures of this configuration; a limit of 0 is off and no answer carries its fields.
 */
export interface RateLimitDoc {
  /** the policy's name in the fields: "validate" */
  policy: string;
  /** requests per window, as configured (0: off) */
  limit: number;
  /** the RateLimit-Policy value this instance sends for it */
  policyField: string;
  /** what one count is kept for: "license key" */
  per: string;
  /** the variable that sets the limit */
  setting: string;
  /** a license may have its own limit instead (the admin API's rateLimits): its answers' policy shows that one */
  perLicense?: boolean;
  /**
   * By status, which answers carry the fields: 'every' answer of that status, or only those
   * a phrase names (and why the others do not). A status not named never carries them.
   */
  statuses: Record<number, 'every' | string>;
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
  /** 'public', 'admin', 'operations', 'documentation' or 'dashboard': the groups of /docs and /admin/docs */
  tags: string[];
  /** who may call it: the admin bearer token, a license's access token, or anyone */
  auth: 'admin' | 'accessToken' | 'metricsToken' | 'none';
  /** each ":param" of the path, by name */
  params?: Record<string, ParamDoc>;
  /** the route's query schema: each property is a query parameter */
  query?: TObject;
  /** request headers the route reads (Authorization is given by `auth`) */
  headers?: Record<string, ParamDoc>;
  /** the route's body schema (the one its bodyParser compiles) and examples of it */
  body?: { schema: TSchema; examples: Example[] };
  /** the limits the route counts, each with the answers that carry its RateLimit fields */
  rateLimits?: RateLimitDoc[];
  /** its answers never wait on Redis or Postgres (built at start, or read with a timeout of their own): no 503 */
  neverUnavailable?: true;
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

/** Several answers' phrases as one description: the phrase itself, or a list of them. */
export function describeCases(whens: readonly string[]): string {
  return whens.length === 1 ? (whens[0] as string) : whens.map((w) => `- ${w}`).join('\n');
}

/**
 * One of several bodies: oneOf, since the answers' objects are closed and each differs
 * from the others by a literal (a code, a message) or a field of its own, so a body
 * matches exactly one (test/system/openapi.test.ts checks every example and answer).
 */
export function oneOf(schemas: readonly TSchema[]): TSchema {
  return schemas.length === 1 ? (schemas[0] as TSchema) : Type.Unsafe({ oneOf: [...schemas] });
}

/**
 * The headers of a status's answers from the replies themselves: a header every case's
 * reply carries is always sent; one only some carry is sent with those (their phrases).
 * A header whose value is the same in every reply (Allow, Connection) keeps that value.
 */
function headersOf(cases: readonly Case[]): HeaderUse[] {
  const names = [...new Set(cases.flatMap(([, reply]) => (reply.headers ?? []).map(([name]) => name)))];
  return names.map((name) => {
    const carriers = cases.filter(([, reply]) => reply.headers?.some(([n]) => n === name));
    const values = new Set(carriers.map(([, reply]) => reply.headers?.find(([n]) => n === name)?.[1]));
    const value = values.size === 1 && CONSTANT_HEADERS.has(name) ? [...values][0] : undefined;
    const when = carriers.length === cases.length ? undefined : carriers.map(([w]) => w).join('; ');
    return when === undefined && value === undefined ? name : { name, ...(when !== undefined ? { when } : {}), ...(value !== undefined ? { value } : {}) };
  });
}

/** Headers whose value in a pre-rendered reply is the value every such answer carries. */
const CONSTANT_HEADERS = new Set(['Allow', 'Connection', 'WWW-Authenticate']);

/**
 * Error answers from the route's own reply table, grouped by status: each case is a reply
 * the handler really sends and when it does, and the headers are those replies' own. `schemaOf`
 * gives the schema of a status from the bodies of its cases (src/openapi/schemas.ts
 * codedErrorOf: the codes they carry); a case of another shape (a 429 of the rate limit)
 * names its own schema.
 */
export function errorResponses(schemaOf: (bodies: unknown[]) => TSchema, cases: readonly Case[]): Record<number, ResponseDoc> {
  const byStatus = new Map<number, Case[]>();
  for (const c of cases) {
    const status = statusOf(c[1]);
    byStatus.set(status, [...(byStatus.get(status) ?? []), c]);
  }
  const out: Record<number, ResponseDoc> = {};
  for (const [status, list] of byStatus) {
    const parts: SchemaParts = {
      schemaOf, family: list.filter((c) => c[2] === undefined).map((c) => bodyOf(c[1])), own: list.flatMap((c) => (c[2] ? [c[2]] : [])),
    };
    const headers = headersOf(list);
    out[status] = {
      description: describeCases(list.map(([when]) => when)),
      schema: schemaOfParts(parts),
      parts,
      examples: list.map(([when, reply]) => ({ summary: when, value: bodyOf(reply) })),
      ...(headers.length > 0 ? { headers } : {}),
    };
  }
  return out;
}

/** When the coded 404 NOT_FOUND is answered: a path no route serves, or a file name a file route does not serve. */
export const NOT_FOUND_WHEN = 'nothing is served at this path: no route serves it, or no file has this name';

/** What a page or one of its files is called and answers, for pageDoc and fileDoc. */
export interface StaticDoc {
  summary: string;
  description?: string;
  tag: string;
  example: Example;
  /** the headers its answers carry */
  headers: string[];
}

/** What a file served from memory by src/http/static.ts answers besides: the coding, the validators, the 304. */
export function fromMemory(doc: RouteDoc): RouteDoc {
  const ok = doc.responses[200] as ResponseDoc;
  const vary = { name: 'Vary', value: 'Accept-Encoding' };
  const compressed = 'a request whose Accept-Encoding accepts br or gzip (br when it accepts both), for a body that compresses';
  return {
    ...doc,
    description: [doc.description, 'Compressed as the request\'s Accept-Encoding allows (not without the header), and revalidated by its ETag.'].filter((d) => d).join(' '),
    headers: {
      ...doc.headers,
      'If-None-Match': { description: 'the ETag of an answer kept: 304 without a body while it is still the current one', schema: Type.String() },
    },
    responses: {
      ...doc.responses,
      200: { ...ok, headers: [...(ok.headers ?? []), 'ETag', vary, { name: 'Content-Encoding', when: compressed }] },
      304: {
        description: 'Not modified: If-None-Match names the ETag this request would get; no body (keep the copy)',
        schema: Type.Null(), examples: [], noBody: true, headers: ['Cache-Control', 'ETag', vary],
      },
    },
  };
}

/** The doc of a page the service serves (/docs, /dashboard): an HTML answer, nothing else. */
export function pageDoc(d: StaticDoc): RouteDoc {
  return {
    summary: d.summary, description: d.description, tags: [d.tag], auth: 'none', neverUnavailable: true,
    responses: { 200: { description: 'the HTML page', contentType: 'text/html', schema: Type.String(), examples: [d.example], headers: d.headers } },
  };
}

/**
 * The doc of a page's files at <page>/:asset: the names it serves, each with its own
 * Content-Type, and the 404 (`notFound`, in the route's error family `schemaOf`) of any other.
 */
export function fileDoc(d: StaticDoc, names: string[], notFound: Reply, schemaOf: (bodies: unknown[]) => TSchema): RouteDoc {
  return {
    summary: d.summary, description: d.description, tags: [d.tag], auth: 'none', neverUnavailable: true,
    params: { asset: { description: 'the file name, as the page links it', schema: Type.Union(names.map((n) => Type.Literal(n))) } },
    responses: {
      200: { description: 'the file, with its Content-Type', contentType: '*/*', schema: Type.String(), examples: [d.example], headers: d.headers },
      ...errorResponses(schemaOf, [[NOT_FOUND_WHEN, notFound]]),
    },
  };
}
