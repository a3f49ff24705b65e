import type { Static, TSchema } from '@sinclair/typebox';
import type { Reply } from '../../http/reply.js';
import { bodyParser, jsonObject, queryParser } from '../schemas.js';
import { schemaRefusal, type Expectations } from './refusals.js';

// The admin routes' parsers: the service's own (src/routes/schemas.ts), with a refusal that
// says what is wrong and what is expected (./refusals.ts) instead of the field's name alone.

export type Checked<T> = { ok: true; value: T } | { ok: false; reply: Reply };

/** A JSON body of the schema, or its 400. */
export function adminBodyParser<S extends TSchema>(schema: S): (body: Buffer | null) => Checked<Static<S>> {
  const parse = bodyParser(schema);
  return (body) => {
    const parsed = parse(body);
    if (parsed.ok) return parsed;
    // only a refused body is read twice: the value the error points into
    return { ok: false, reply: schemaRefusal(schema, jsonObject(body), parsed.error) };
  };
}

/** A query string of the schema (the first value of each parameter), or its 400. */
export function adminQueryParser<S extends TSchema>(schema: S, expectations: Expectations): (query: string) => Checked<Static<S>> {
  const parse = queryParser(schema);
  return (query) => {
    const parsed = parse(query);
    if (parsed.ok) return parsed;
    const value: Record<string, string> = {};
    for (const [name, text] of new URLSearchParams(query)) if (!(name in value)) value[name] = text;
    return { ok: false, reply: schemaRefusal(schema, value, parsed.error, expectations) };
  };
}

/** The 400 a parser answers to this body: an example in a route's doc that is the real answer. */
export function refusalOf<T>(parse: (body: Buffer | null) => Checked<T>, body: unknown): Reply {
  const parsed = parse(Buffer.from(JSON.stringify(body)));
  if (parsed.ok) throw new Error(`refusalOf: ${JSON.stringify(body)} is accepted`);
  return parsed.reply;
}
