import { isAscii } from 'node:buffer';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type Options } from 'ajv';

// The edge of the service: every body, path parameter, query parameter and header value
// the service reads is checked against a TypeBox schema compiled once by ajv at start,
// before anything reaches Redis, Postgres or a usage stream. Here are the rules and the
// parts the routes share; each route's body schema is in its file. The schemas are also
// the TypeScript types of the handlers' input. (X-Forwarded-For is read by the HTTP layer:
// src/http/clientAddress.ts.)
//
// Every string is "text": no C0 control character (NUL included) and no DEL, since Postgres
// refuses NUL in text and a usage event it refuses must never be queued; and well-formed
// UTF-16 (no lone surrogate), so what is stored is what was sent. Every string is bounded.

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isText(value: string): boolean {
  return !CONTROL.test(value) && !LONE_SURROGATE.test(value);
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/;
const YEARS = { min: 1970, max: 9999 };
/** the instants of those years: an offset can move a time written in one out of them */
const INSTANTS = { min: Date.UTC(YEARS.min, 0, 1), end: Date.UTC(YEARS.max + 1, 0, 1) };

/**
 * An RFC 3339 date-time that Date represents exactly: a real calendar day, no leap second
 * (23:59:60 has no Date), a year Postgres and JSON clients agree on, as written and once its
 * offset is applied (9999-12-31T23:59:59-01:00 is in the year 10000, which Postgres refuses).
 */
export function isInstant(value: string): boolean {
  const m = DATE_TIME.exec(value);
  if (m === null) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as number[];
  if (year! < YEARS.min || year! > YEARS.max || month! < 1 || month! > 12 || day! < 1) return false;
  if (day! > new Date(Date.UTC(year!, month!, 0)).getUTCDate()) return false;
  if (hour! > 23 || minute! > 59 || second! > 59) return false;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return false;
  const ms = Date.parse(value);
  return ms >= INSTANTS.min && ms < INSTANTS.end;
}

/**
 * An absolute http(s) URL to send webhooks to: text without spaces, a host, no port 0 (no
 * delivery could reach it), and no user or password in it (they would travel in every
 * request and show in the admin view).
 */
export function isWebhookUrl(value: string): boolean {
  if (!isText(value) || /\s/.test(value)) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '' && url.port !== '0' && url.username === '' && url.password === '';
}

// validateSchema off: checking the service's own schemas against JSON Schema's meta-schema
// compiled that meta-schema in every process at its start, about a twentieth of a start's
// CPU. The schemas are TypeBox's, typed where they are written; those /openapi.json and
// /admin/openapi.json publish are compiled with the check on by their tests
// (test/helpers/openapi.ts), and strict mode still refuses any keyword ajv does not know.
const AJV_OPTIONS: Options = { allErrors: false, coerceTypes: false, useDefaults: true, strict: true, validateSchema: false };
const ajv = new Ajv(AJV_OPTIONS);
ajv.addFormat('text', { type: 'string', validate: isText });

// A body whose JSON text is ASCII without a backslash or a DEL holds only strings of
// printable ASCII: JSON refuses raw control characters, and anything else would need an
// escape. Every string of it is text, and its length in characters is its length in UTF-16
// units. A validate body (a token, an ASCII origin) is such a "plain" body, and so is a sign
// or release body whose document names or reason are ASCII; each is checked by a second
// compilation of its schema that scans no string for either: for validate's token the two
// scans took 1.2 µs of the 1.9 µs its body took to parse and check (bench/README.md,
// Findings). `unicode` is deprecated (it says so through the logger): were it gone, lengths
// would be counted in characters again, the same figures more slowly.
const plainAjv = new Ajv({ ...AJV_OPTIONS, unicode: false, logger: false });
plainAjv.addFormat('text', true);

for (const checker of [ajv, plainAjv]) {
  checker.addFormat('instant', { type: 'string', validate: isInstant });
  checker.addFormat('webhook-url', { type: 'string', validate: isWebhookUrl });
}

const BACKSLASH = 0x5c;
const DEL = 0x7f;

/** Whether a body's JSON strings are all printable ASCII, whatever it holds (see above). */
export function plainJson(body: Buffer | null): boolean {
  return body !== null && isAscii(body) && body.indexOf(BACKSLASH) < 0 && body.indexOf(DEL) < 0;
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
export const UUID = new RegExp(UUID_PATTERN);

/** A bounded string of text (see above). */
export function Text(options: { minLength?: number; maxLength: number }) {
  return Type.String({ format: 'text', ...options });
}

// the fields more than one route takes; each route's body schema is in its file
export const ImzaTipi = Type.Union([Type.Literal(0), Type.Literal(1)]);
export const LicenseKey = Type.String({ pattern: UUID_PATTERN, maxLength: 36 });
export const Password = Text({ minLength: 1, maxLength: 1024 });
export const OrganizationName = Text({ minLength: 1, maxLength: 200 });
export const ExpiryDate = Type.String({ format: 'instant', maxLength: 40 });
export const Domains = Type.Array(Text({ minLength: 1, maxLength: 253 }), {
  maxItems: 100,
  description: 'authorised origins: host names ("example.com"; "*.example.com" for its subdomains, not itself); an entry with a scheme, '
    + 'port or path counts by its host, and one that names no host is 400 naming domains',
});
export const Quota = Type.Integer({ minimum: 0, maximum: 1e12 });
/** Units a day a license's holder may give back after a failed signing (POST /api/license/release); 0: none. */
export const ReleasesPerDay = Type.Integer({
  minimum: 0, maximum: 1e6,
  description: 'units a day the holder may give back after a failed signing (POST /api/license/release); 0: releases off (the default)',
});
/** null clears the webhook (and forgets its secret); the target rules beyond the format are the handlers' (src/webhooks/guard.ts) */
export const WebhookUrl = Type.Union([Type.String({ format: 'webhook-url', maxLength: 2048 }), Type.Null()], {
  description: 'where the worker POSTs this license\'s events; null removes it and its secret. Only https:// unless the instance '
    + 'sets WEBHOOK_ALLOW_HTTP=1. A host that is, or resolves to, an internal address (loopback, private, CGNAT, link-local, '
    + 'unspecified, multicast, broadcast, reserved or documentation ranges, such an IPv4 address inside IPv6, a cloud metadata '
    + 'endpoint) or is named localhost, *.localhost, *.internal, *.local or *.home.arpa is refused unless it sets '
    + 'WEBHOOK_ALLOW_PRIVATE_NETWORKS=1. Either refusal: 400 naming webhookUrl. A name that does not resolve when it is set is '
    + 'accepted: every delivery resolves and checks it again',
});
export const WebhookSecret = Text({ minLength: 16, maxLength: 256 });
/** One of a license's own limits per minute: 0 none for this license, null the deployment's (RATE_*_PER_MIN) */
const RateLimitPerMin = Type.Union([Type.Integer({ minimum: 0, maximum: 1e9 }), Type.Null()]);
/** A license's own limits (src/licenses/rateLimits.ts); a limit not given: the default on create, unchanged on a PATCH */
export const RateLimitsInput = Type.Object({
  getToken: Type.Optional(RateLimitPerMin),
  signToken: Type.Optional(RateLimitPerMin),
  validate: Type.Optional(RateLimitPerMin),
  checkQuota: Type.Optional(RateLimitPerMin),
}, {
  additionalProperties: false,
  description: 'the license\'s own rate limits per minute, over the deployment\'s (docs/api.md#limits): getToken (tokens per license '
    + 'key, RATE_GET_TOKEN_PER_MIN), signToken (RATE_SIGN_TOKEN_PER_MIN), validate (validate and sign together, '
    + 'RATE_VALIDATE_PER_MIN), checkQuota (per license key and client address, RATE_CHECK_QUOTA_PER_MIN). Each an integer '
    + '0..1000000000 (0: no limit for this license) or null (the deployment\'s); on a PATCH a limit not given keeps its value. '
    + 'In force on the next request, on every instance',
});

/**
 * The name of the offending field, for "INVALID_REQUEST naming the field": the top-level
 * one, also for an error inside it (a document of sign's documents is "documents").
 */
function fieldOf(error: ErrorObject | undefined): string {
  if (!error) return 'body';
  const path = error.instancePath.replace(/^\//, '').split('/')[0];
  if (path) return path;
  if (error.keyword === 'required') return String(error.params.missingProperty);
  if (error.keyword === 'additionalProperties') return String(error.params.additionalProperty);
  return 'body';
}

/** A value of the schema, or what is wrong: the top-level field's name and ajv's first error (none: not a JSON object). */
export type Parsed<T> = { ok: true; value: T } | { ok: false; field: string; error?: ErrorObject };

/** A body as a JSON object, or null when it is not one (not JSON, or an array, a string...). */
export function jsonObject(body: Buffer | null): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(body === null ? '' : body.toString('utf8'));
  } catch {
    return null;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/**
 * A checker of a parsed JSON object against the schema: its value, or the name of what is
 * wrong. With `plainBodies` (the routes on the redemption path) a second compilation checks
 * an object parsed from a body plainJson accepts (`plain`): the same verdict, sooner. The
 * other routes skip it: a compilation costs a process about 1.5 ms at its start.
 */
export function valueParser<S extends TSchema>(
  schema: S, options: { plainBodies?: boolean } = {},
): (value: Record<string, unknown> | null, plain?: boolean) => Parsed<Static<S>> {
  const validate = ajv.compile(schema);
  const validatePlain = options.plainBodies === true ? plainAjv.compile(schema) : validate;
  return (value, plain = false) => {
    if (value === null) return { ok: false, field: 'body' };
    const check = plain ? validatePlain : validate;
    if (!check(value)) return { ok: false, field: fieldOf(check.errors?.[0]), error: check.errors?.[0] };
    return { ok: true, value: value as Static<S> };
  };
}

/** A body parser: JSON text to a value of the schema's type, or the name of what is wrong. */
export function bodyParser<S extends TSchema>(schema: S): (body: Buffer | null) => Parsed<Static<S>> {
  const check = valueParser(schema);
  return (body) => check(jsonObject(body));
}

/** A query-string parser: the first value of each parameter, checked against the schema. */
export function queryParser<S extends TSchema>(schema: S): (query: string) => Parsed<Static<S>> {
  const validate = ajv.compile(schema);
  return (query) => {
    const value: Record<string, string> = {};
    for (const [name, text] of new URLSearchParams(query)) if (!(name in value)) value[name] = text;
    if (!validate(value)) return { ok: false, field: fieldOf(validate.errors?.[0]), error: validate.errors?.[0] };
    return { ok: true, value: value as Static<S> };
  };
}

/** License keys are UUIDs, compared case-insensitively. */
export function canonicalKey(licenseKey: string): string {
  return licenseKey.toLowerCase();
}

/** A {licenseKey} path parameter in canonical (lower-case) form, or null when it is not a UUID. */
export function licenseKeyParam(raw: string | undefined): string | null {
  // the pattern spells exactly 36 characters, so it holds LicenseKey's maxLength too, without counting them
  return raw !== undefined && UUID.test(raw) ? raw.toLowerCase() : null;
}

/** 1-255 printable ASCII, neither starting nor ending with a space. */
const IDEMPOTENCY_KEY_RULE = '[\\x21-\\x7e](?:[\\x20-\\x7e]{0,253}[\\x21-\\x7e])?';
const IDEMPOTENCY_KEY = new RegExp(`^${IDEMPOTENCY_KEY_RULE}$`);
/** The same rule as a schema, for the document (/openapi.json); an empty value is read as no header. */
export const IdempotencyKey = Type.String({ maxLength: 255, pattern: `^(?:${IDEMPOTENCY_KEY_RULE})?$` });

/** An Idempotency-Key header (admin purchases, validate): null when absent, false when malformed. */
export function idempotencyKeyHeader(header: string): string | null | false {
  if (header === '') return null;
  return IDEMPOTENCY_KEY.test(header) ? header : false;
}

/** A bearer token: visible ASCII (a JWT, an admin token), bounded. */
const BEARER = /^Bearer[ \t]+([\x21-\x7e]{1,4096})[ \t]*$/i;

/** The token of an "Authorization: Bearer <token>" header, or null. */
export function bearer(header: string): string | null {
  const match = BEARER.exec(header);
  return match ? (match[1] as string) : null;
}
