import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isInstant, isText } from '../../src/routes/schemas.js';
import type { Answer, Client } from './http.js';

// /openapi.json as the tests read it: its schemas compiled by ajv (with the service's own
// formats "text" and "instant", and ajv-formats' "date-time" and "uuid"), the operation of a
// concrete request found by its path template, and a Client that checks every answer it
// gets against the document (what makes the document trustworthy: real bodies, real statuses).

// ajv-formats is CommonJS: its default export is the function under Node's ESM interop
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export type OpenApi = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, Record<string, unknown>>;
};
export type Operation = {
  parameters?: { name: string; in: string; schema: unknown; required?: boolean }[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { description: string; content: Record<string, Media>; headers?: Record<string, unknown> }>;
  tags: string[];
  security: unknown[];
};
export type Media = { schema: unknown; examples?: Record<string, { summary: string; value: unknown }> };

const DOC_ID = 'openapi.json';

/** A JSON pointer segment. */
const pointer = (segment: string): string => segment.replace(/~/g, '~0').replace(/\//g, '~1');

export class Documented {
  private readonly ajv: Ajv;
  private readonly templates: { method: string; template: string; pattern: RegExp }[] = [];
  private readonly compiled = new Map<string, ValidateFunction>();
  /** "post /path 200" of every answer checked */
  readonly seen = new Set<string>();

  constructor(readonly doc: OpenApi) {
    this.ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addFormat('text', { type: 'string', validate: isText });
    this.ajv.addFormat('instant', { type: 'string', validate: isInstant });
    this.ajv.addSchema(doc, DOC_ID);
    for (const [template, item] of Object.entries(doc.paths)) {
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i');
      for (const method of Object.keys(item)) this.templates.push({ method, template, pattern });
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

  errorsOf(v: ValidateFunction): string {
    return this.ajv.errorsText(v.errors, { separator: '; ' });
  }

  /** The documented operation a request reaches: its method and path template, or null. */
  operationOf(method: string, path: string): { method: string; template: string } | null {
    const bare = path.split('?')[0] as string;
    const found = this.templates.find((t) => t.method === method.toLowerCase() && t.pattern.test(bare));
    return found ? { method: found.method, template: found.template } : null;
  }

  /** Why an answer does not match the document (null when it does): undocumented operation or status, wrong type or body. */
  mismatch(method: string, path: string, res: Answer): string | null {
    const op = this.operationOf(method, path);
    if (op === null) return `${method} ${path}: no documented operation`;
    const responses = this.doc.paths[op.template]![op.method]!.responses;
    const documented = responses[String(res.status)];
    const where = `${method.toUpperCase()} ${op.template} ${res.status}`;
    if (!documented) return `${where}: status not documented (${res.text.slice(0, 200)})`;
    this.seen.add(`${op.method} ${op.template} ${res.status}`);
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    const media = Object.keys(documented.content);
    if (!media.includes(type) && !media.includes('*/*')) return `${where}: Content-Type ${type}, documented ${media.join(', ')}`;
    if (type !== 'application/json') return null;
    const v = this.validatorAt(['paths', op.template, op.method, 'responses', String(res.status), 'content', 'application/json', 'schema']);
    return v(res.body) ? null : `${where}: body ${res.text.slice(0, 300)} does not match: ${this.errorsOf(v)}`;
  }
}

/** A Client that checks every answer against the document and keeps the mismatches. */
export function checkedClient(inner: Client, documented: Documented, mismatches: string[]): Client {
  return {
    async request(method, path, body, headers) {
      const res = await inner.request(method, path, body, headers);
      const why = documented.mismatch(method, path, res);
      if (why !== null) mismatches.push(why);
      return res;
    },
  };
}
