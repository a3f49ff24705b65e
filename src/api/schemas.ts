import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';

// Request bodies: one TypeBox schema each, compiled once by ajv at start. The schemas are
// also the TypeScript types of the handlers' input.

const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: true, strict: true });
(addFormatsModule as unknown as (a: Ajv) => void)(ajv);

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
export const UUID = new RegExp(UUID_PATTERN);

export const GetTokenBody = Type.Object({
  licenseKey: Type.String({ minLength: 1, maxLength: 128 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
  imzaTipi: Type.Union([Type.Literal(0), Type.Literal(1)]),
});

export const SignTokenBody = Type.Object({
  imzaTipi: Type.Union([Type.Literal(0), Type.Literal(1)]),
});

// token emptiness is its own published error, so the schema lets null and "" through
export const ValidateBody = Type.Object({
  token: Type.Optional(Type.Union([Type.String({ maxLength: 4096 }), Type.Null()])),
  origin: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
});

const Domains = Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { maxItems: 100 });
const Quota = Type.Integer({ minimum: 0, maximum: 1e12 });

export const CreateLicenseBody = Type.Object(
  {
    organizationName: Type.String({ minLength: 1, maxLength: 200 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
    totalQuota: Quota,
    expiryDate: Type.String({ format: 'date-time' }),
    isActive: Type.Optional(Type.Boolean()),
    domains: Type.Optional(Domains),
    licenseKey: Type.Optional(Type.String({ pattern: UUID_PATTERN })),
  },
  { additionalProperties: false },
);

export const PatchLicenseBody = Type.Object(
  {
    organizationName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    expiryDate: Type.Optional(Type.String({ format: 'date-time' })),
    isActive: Type.Optional(Type.Boolean()),
    domains: Type.Optional(Domains),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const AddQuotaBody = Type.Object(
  { add: Type.Integer({ minimum: 1, maximum: 1e12 }) },
  { additionalProperties: false },
);

export type GetTokenBody = Static<typeof GetTokenBody>;
export type SignTokenBody = Static<typeof SignTokenBody>;
export type ValidateBody = Static<typeof ValidateBody>;
export type CreateLicenseBody = Static<typeof CreateLicenseBody>;
export type PatchLicenseBody = Static<typeof PatchLicenseBody>;
export type AddQuotaBody = Static<typeof AddQuotaBody>;

/** The name of the offending field, for "INVALID_REQUEST naming the field". */
function fieldOf(error: ErrorObject | undefined): string {
  if (!error) return 'body';
  if (error.keyword === 'required') return String(error.params.missingProperty);
  if (error.keyword === 'additionalProperties') return String(error.params.additionalProperty);
  const path = error.instancePath.replace(/^\//, '').split('/')[0];
  return path || 'body';
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; field: string };

/** A body parser: JSON text to a value of the schema's type, or the name of what is wrong. */
export function bodyParser<S extends TSchema>(schema: S): (body: Buffer | null) => Parsed<Static<S>> {
  const validate = ajv.compile(schema);
  return (body) => {
    let value: unknown;
    try {
      value = JSON.parse(body === null ? '' : body.toString('utf8'));
    } catch {
      return { ok: false, field: 'body' };
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, field: 'body' };
    if (!validate(value)) return { ok: false, field: fieldOf(validate.errors?.[0]) };
    return { ok: true, value: value as Static<S> };
  };
}
