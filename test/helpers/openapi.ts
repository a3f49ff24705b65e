import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isInstant, isText, isWebhookUrl } from '../../src/routes/schemas.js';
import type { Answer, Client } from './http.js';

// /openapi.json and /admin/openapi.json as the tests read them: each one's schemas compiled
// by ajv (with the service's own formats "text", "instant" and "webhook-url", and
// ajv-formats' "date-time" and "uuid"), the operation of a concrete request found by its
// path template, and a Client that checks every answer it gets against the document of its
// path (what makes the documents trustworthy: real statuses, bodies and headers).

// ajv-formats is CommonJS: its default export is the function under Node's ESM interop
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export type OpenApi = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, Record<string, unknown>>;
};
export type Parameter = { name: string; in: string; schema: Record<string, unknown>; required?: boolean; description?: string };
export type Operation = {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, Response | { $ref: string }>;
  tags: string[];
  security: unknown[];
  description?: string;
};
export type Response = { description: string; content?: Record<string, Media>; headers?: Record<string, HeaderDoc> };
export type HeaderDoc = { description: string; required?: boolean; schema: unknown };
export type Media = { schema: unknown; examples?: Record<string, { summary: string; value: unknown }> };

/**
 * Headers a contract test holds to the document both ways: present where the document
 * says every answer carries them, and never on an answer whose response does not list
 * them. (X-Content-Type-Options and Strict-Transport-Security are on every answer, said
 * once in the document's description.)
 */
const TRACKED = [
  'retry-after', 'ratelimit', 'ratelimit-policy', 'allow', 'cache-control', 'www-authenticate', 'content-security-policy', 'vary',
  'access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-max-age',
  'access-control-expose-headers',
];

/** What a test expects of an answer's conditional headers (those a response lists as not required). */
export interface HeaderExpectation {
  /** RateLimit-Policy and RateLimit: both present (true) or both absent (false) */
  rateLimit?: boolean;
  retryAfter?: boolean;
}

const DOC_ID = 'openapi.json';

/** A JSON pointer segment. */
const pointer = (segment: string): string => segment.replace(/~/g, '~0').replace(/\//g, '~1');

export class Documented {
  private readonly ajv: Ajv;
  private readonly templates: { template: string; pattern: RegExp }[] = [];
  private readonly compiled = new Map<string, ValidateFunction>();
  /** "post /path 200" of every answer checked; "NotFound" for a path no route serves */
  readonly seen = new Set<string>();

  constructor(readonly doc: OpenApi) {
    this.ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addFormat('text', { type: 'string', validate: isText });
    this.ajv.addFormat('instant', { type: 'string', validate: isInstant });
    this.ajv.addFormat('webhook-url', { type: 'string', validate: isWebhookUrl });
    this.ajv.addSchema(doc, DOC_ID);
    // a path without parameters first: /docs/interactive is its own, not a /docs/{asset} (as the router matches)
    for (const template of Object.keys(doc.paths).sort((a, b) => Number(a.includes('{')) - Number(b.includes('{')))) {
      this.templates.push({ template, pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i') });
    }
  }

  /** The validator of the schema at a JSON pointer into the document (its $refs resolved in it). */
  validatorAt(segments: string[]): ValidateFunction {
    const ref = `${DOC_ID}#/${segments.map(pointer).join('/')}`;
    let v = this.compiled.get(ref);
    if (!v) {
      v = this.ajv.compile({ $ref: ref });
      this.compiled.set(ref, v);
    }
    return v;
  }

  /** A validator of a schema object of the document (a parameter's, a header's). */
  validatorOf(schema: unknown): ValidateFunction {
    return this.ajv.compile(schema as object);
  }

  errorsOf(v: ValidateFunction): string {
    return this.ajv.errorsText(v.errors, { separator: '; ' });
  }

  /** The path template a concrete path falls under, or null (a path no route serves). */
  templateOf(path: string): string | null {
    const bare = path.split('?')[0] as string;
    return this.templates.find((t) => t.pattern.test(bare))?.template ?? null;
  }

  /** The response object of a status of an operation ($ref to components resolved), with where its schema is. */
  response(template: string, method: string, status: string): { r: Response; at: string[] } | null {
    const found = this.doc.paths[template]?.[method]?.responses[status];
    if (!found) return null;
    if ('$ref' in found) return this.component(found.$ref);
    return { r: found, at: ['paths', template, method, 'responses', status] };
  }

  private component(ref: string): { r: Response; at: string[] } {
    const at = ref.replace(/^#\//, '').split('/');
    return { r: (this.doc.components.responses as Record<string, Response>)[at[2] as string] as Response, at };
  }

  /**
   * Why an answer does not match the document (null when it does): no documented operation
   * or status, a wrong Content-Type or body, a required header missing, an undocumented
   * header present, a header of the wrong form, or a conditional header against `expect`.
   */
  mismatch(method: string, path: string, res: Answer, expect: HeaderExpectation = {}): string | null {
    const m = method.toLowerCase();
    const template = this.templateOf(path);
    let found: { r: Response; at: string[] } | null;
    let where: string;
    if (template === null) {
      where = `${method} ${path} ${res.status} (no route)`;
      if (res.status !== 404) return `${where}: a path no route serves answers 404`;
      found = this.component('#/components/responses/NotFound');
      this.seen.add('NotFound');
    } else {
      const item = this.doc.paths[template] as Record<string, Operation>;
      where = `${method} ${template} ${res.status}`;
      // a 405 is the path's answer to any method it does not serve, listed on each of its operations
      const op = item[m] ? m : res.status === 405 ? Object.keys(item)[0] as string : null;
      if (op === null) return `${where}: no documented operation (${res.text.slice(0, 200)})`;
      found = this.response(template, op, String(res.status));
      if (found === null) return `${where}: status not documented (${res.text.slice(0, 200)})`;
      for (const o of res.status === 405 ? Object.keys(item) : [op]) this.seen.add(`${o} ${template} ${res.status}`);
    }
    return this.bodyMismatch(where, m, found, res) ?? this.headerMismatch(where, found.r, res, expect);
  }

  private bodyMismatch(where: string, method: string, { r, at }: { r: Response; at: string[] }, res: Answer): string | null {
    const content = r.content ?? {};
    if (method === 'head' || Object.keys(content).length === 0) {
      return res.text === '' ? null : `${where}: a body where none is documented (${res.text.slice(0, 100)})`;
    }
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    const media = Object.keys(content);
    if (!media.includes(type) && !media.includes('*/*')) return `${where}: Content-Type ${type}, documented ${media.join(', ')}`;
    if (type !== 'application/json') return null;
    const v = this.validatorAt([...at, 'content', 'application/json', 'schema']);
    return v(res.body) ? null : `${where}: body ${res.text.slice(0, 300)} does not match: ${this.errorsOf(v)}`;
  }

  private headerMismatch(where: string, r: Response, res: Answer, expect: HeaderExpectation): string | null {
    const documented = new Map(Object.entries(r.headers ?? {}).map(([name, h]) => [name.toLowerCase(), h]));
    for (const [name, h] of documented) {
      const value = res.headers.get(name);
      if (value === null) {
        if (h.required) return `${where}: ${name} is documented on every answer, and missing`;
        continue;
      }
      const v = this.validatorOf(h.schema);
      const typed = (h.schema as { type?: string }).type === 'integer' ? Number(value) : value;
      if (!v(typed)) return `${where}: ${name}: ${value} does not match ${JSON.stringify(h.schema)}`;
    }
    for (const name of TRACKED) {
      if (res.headers.get(name) !== null && !documented.has(name)) return `${where}: ${name}: ${res.headers.get(name)} is not documented on this response`;
    }
    const check = (names: string[], wanted: boolean | undefined): string | null => {
      if (wanted === undefined) return null;
      for (const name of names) {
        if ((res.headers.get(name) !== null) !== wanted) return `${where}: ${name} expected ${wanted ? 'present' : 'absent'}`;
        const h = documented.get(name);
        if (wanted && !h) return `${where}: ${name} is sent and the response does not list it`;
        if (!wanted && h?.required) return `${where}: ${name} is absent and the response says every answer carries it`;
      }
      return null;
    };
    return check(['ratelimit-policy', 'ratelimit'], expect.rateLimit) ?? check(['retry-after'], expect.retryAfter);
  }
}

/**
 * The public document and the admin API's (null when the instance serves no admin API): a
 * path is held to the one that documents it; a path neither documents, to the public one's
 * 404 of a path no route serves (the admin document names it there).
 */
export class Documents {
  constructor(readonly publicDoc: Documented, readonly adminDoc: Documented | null) {}

  of(path: string): Documented {
    return this.adminDoc !== null && this.adminDoc.templateOf(path) !== null ? this.adminDoc : this.publicDoc;
  }

  mismatch(method: string, path: string, res: Answer, expect: HeaderExpectation = {}): string | null {
    return this.of(path).mismatch(method, path, res, expect);
  }

  /** "post /path 200" of every answer checked, in either document */
  get seen(): Set<string> {
    return new Set([...this.publicDoc.seen, ...(this.adminDoc?.seen ?? [])]);
  }

  /** the paths of both documents (none is in both: test/system/openapi.test.ts) */
  get paths(): Record<string, Record<string, Operation>> {
    return { ...this.publicDoc.doc.paths, ...this.adminDoc?.doc.paths };
  }
}

/** A Client whose every answer is checked against the document of its path; the mismatches are kept. */
export interface CheckedClient extends Client {
  /** one request, its answer checked with what the test expects of its conditional headers */
  expecting(expect: HeaderExpectation): Client;
}

export function checkedClient(inner: Client, documented: Documents, mismatches: string[]): CheckedClient {
  const checked = (expect: HeaderExpectation): Client => ({
    async request(method, path, body, headers) {
      const res = await inner.request(method, path, body, headers);
      const why = documented.mismatch(method, path, res, expect);
      if (why !== null) mismatches.push(why);
      return res;
    },
  });
  return { ...checked({}), expecting: checked };
}

/** Hop-by-hop headers (RFC 9110 7.6.1) that a document's responses name: HTTP/2 forbids them, so none may be promised. */
export function hopByHopHeaders(doc: { paths: Record<string, Record<string, unknown>> }): string[] {
  const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).flatMap(([method, op]) =>
    Object.entries((op as { responses?: Record<string, { headers?: Record<string, unknown> }> }).responses ?? {})
      .flatMap(([status, response]) => Object.keys(response.headers ?? {}).filter((n) => hopByHop.has(n.toLowerCase())).map((n) => `${method} ${path} ${status}: ${n}`))));
}
