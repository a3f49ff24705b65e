import type { TSchema } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import type { Reply } from '../../http/reply.js';
import { coded } from '../replies.js';
import { UUID_PATTERN } from '../schemas.js';

// Every 400 INVALID_REQUEST of the admin API in one form, in Turkish like every other admin
// message: "<path>: <what is wrong>; beklenen: <what is expected>", e.g.
//   totalQuota: "abc" geçerli değil; beklenen: 0 ile 1000000000000 arasında bir tam sayı
// The expectation is read from the very schema the parser compiled (expectationOf), so a
// rule changed in a schema changes its message too; the few checks beyond the schemas
// (domains, webhook targets, the secret a URL needs, the Idempotency-Key header, a cursor)
// give their own expectation to the same function.

/** The 400 naming the field's path, what is wrong with it and what is expected. */
export function refusal(path: string, wrong: string, expected: string): Reply {
  return coded(400, 'INVALID_REQUEST', `${path}: ${wrong}; beklenen: ${expected}`);
}

/** Fields whose value is never repeated in an answer (only its length). */
const SECRET_FIELDS = new Set(['password', 'webhookSecret']);
const SHOWN_CHARACTERS = 60;

/** JSON text of a value; null for one nested too deep to write (JSON.parse reads deeper than JSON.stringify writes). */
function jsonOf(value: unknown): string | null {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return null;
  }
}

/** A value as the message shows it: JSON (control characters escaped), cut short; a secret by its length only. */
export function shown(value: unknown, secret = false): string {
  if (typeof value === 'string' && secret) return `verilen değer (${value.length} karakter)`;
  const json = jsonOf(value);
  if (json === null) return Array.isArray(value) ? 'iç içe bir dizi' : 'iç içe bir nesne';
  if (json.length <= SHOWN_CHARACTERS) return json;
  const length = typeof value === 'string' ? ` (${value.length} karakter)` : '';
  return `${json.slice(0, SHOWN_CHARACTERS)}…${length}`;
}

/** "geçerli değil" after the value shown. */
export function notValid(value: unknown, secret = false): string {
  return `${shown(value, secret)} geçerli değil`;
}

type Schema = TSchema & Record<string, unknown>;

const FORMATS: Record<string, string> = {
  text: 'kontrol karakteri içermeyen bir metin',
  instant: 'RFC 3339 biçiminde bir tarih-saat (ör. 2027-12-31T23:59:59Z)',
  'webhook-url': 'kullanıcı adı, şifre ve boşluk içermeyen mutlak bir https:// adresi',
};

function lengths(s: Schema): string {
  const min = s.minLength as number | undefined;
  const max = s.maxLength as number | undefined;
  if (min !== undefined && max !== undefined) return min === max ? `${min} karakter` : `${min}-${max} karakter`;
  if (max !== undefined) return `en çok ${max} karakter`;
  return min !== undefined ? `en az ${min} karakter` : '';
}

function stringExpectation(s: Schema): string {
  if (s.pattern === UUID_PATTERN) return 'bir UUID (ör. 6f1c2a3e-8b7d-4c5e-9f00-1a2b3c4d5e6f)';
  const kind = FORMATS[s.format as string] ?? 'bir metin';
  const size = lengths(s);
  if (size === '') return kind;
  // "1-200 karakterlik, kontrol karakteri içermeyen bir metin"; a date-time only bounded: after it
  return s.format === 'text' || s.format === undefined ? `${size}lik, ${kind}` : `${kind}, ${size}`;
}

/** What a schema accepts, in words: the "beklenen" of its refusals. */
export function expectationOf(schema: TSchema): string {
  const s = schema as Schema;
  if ('const' in s) return JSON.stringify(s.const);
  const choices = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (choices !== undefined) {
    const words = choices.map(expectationOf);
    return `${words.slice(0, -1).join(', ')} ya da ${words.at(-1) as string}`;
  }
  switch (s.type) {
    case 'integer': {
      const min = s.minimum as number | undefined;
      const max = s.maximum as number | undefined;
      if (min !== undefined && max !== undefined) return `${min} ile ${max} arasında bir tam sayı`;
      return min !== undefined ? `en az ${min} olan bir tam sayı` : 'bir tam sayı';
    }
    case 'boolean':
      return 'true ya da false';
    case 'null':
      return 'null';
    case 'string':
      return stringExpectation(s);
    case 'array': {
      const max = s.maxItems as number | undefined;
      return `${max === undefined ? 'bir dizi' : `en çok ${max} öğelik bir dizi`}, her öğesi ${expectationOf(s.items as TSchema)}`;
    }
    case 'object':
      return `şu alanları olan bir JSON nesnesi: ${Object.keys((s.properties ?? {}) as object).join(', ')}`;
    default:
      return 'geçerli bir değer';
  }
}

/** "domains[1]" from ajv's "/domains/1". */
function pathOf(pointer: string): string {
  const parts = pointer.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  return parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : (i === 0 ? '' : '.') + fieldName(p))).join('');
}

/** A member name as a path shows it: as it is when it is a plain name, else as JSON (it may hold anything). */
function fieldName(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/.test(name) ? name : shown(name);
}

/** The schema and the value at a JSON pointer (undefined where there is none). */
function at(schema: Schema, value: unknown, pointer: string): { schema: Schema | undefined; value: unknown } {
  let s: Schema | undefined = schema;
  let v = value;
  for (const part of pointer.split('/').slice(1)) {
    s = s === undefined ? undefined : (/^\d+$/.test(part) && s.items ? s.items : (s.properties as Record<string, Schema> | undefined)?.[part]) as Schema | undefined;
    v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
  }
  return { schema: s, value: v };
}

/** Per field (top-level name), an expectation that the schema cannot say in words (a query parameter's pattern). */
export type Expectations = Record<string, string>;

/**
 * The refusal of a value (a JSON body, or a query's parameters) that the schema refused
 * with ajv's first error; no error: the body is not a JSON object.
 */
export function schemaRefusal(root: TSchema, value: unknown, error: ErrorObject | undefined, expectations: Expectations = {}): Reply {
  const schema = root as Schema;
  if (error === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) {
    return refusal('body', 'bir JSON nesnesi değil', expectationOf(root));
  }
  const fields = Object.keys((schema.properties ?? {}) as object);
  if (error.keyword === 'additionalProperties') {
    // at the top or inside an object field (rateLimits.x): named by its path, with the object's own fields
    const inner = at(schema, value, error.instancePath).schema ?? schema;
    const known = Object.keys((inner.properties ?? {}) as object);
    const name = fieldName(String(error.params.additionalProperty));
    const path = error.instancePath === '' ? name : `${pathOf(error.instancePath)}.${name}`;
    return refusal(path, 'bilinmeyen alan', `şu alanlardan biri: ${known.join(', ')}`);
  }
  if (error.keyword === 'minProperties' && error.instancePath === '') {
    return refusal('body', 'boş nesne', `şu alanlardan en az biri: ${fields.join(', ')}`);
  }
  const pointer = error.keyword === 'required'
    ? `${error.instancePath}/${String(error.params.missingProperty).replace(/~/g, '~0').replace(/\//g, '~1')}`
    : error.instancePath;
  const found = at(schema, value, pointer);
  const path = pathOf(pointer);
  const top = pointer.split('/')[1] ?? '';
  const expected = expectations[top] ?? (found.schema === undefined ? 'geçerli bir değer' : expectationOf(found.schema));
  const wrong = found.value === undefined ? 'eksik' : notValid(found.value, SECRET_FIELDS.has(top));
  return refusal(path, wrong, expected);
}
