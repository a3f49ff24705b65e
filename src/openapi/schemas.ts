import { Type, type TSchema } from '@sinclair/typebox';

// The answers' schemas, for the documents only (the service never validates what it sends):
// the body shapes more than one route answers with. Every object is closed
// (additionalProperties: false), so a field a route starts sending without documenting it
// fails test/system/openapi.test.ts, which checks real answers against these.

const closed = { additionalProperties: false } as const;

/** An instant the service writes (Date.toISOString). */
export const Timestamp = Type.String({ format: 'date-time' });
/** A JWT this service signed: three base64url parts. */
/** A compact EdDSA JWS (license token, receipt): an Ed25519 signature is 86 base64url characters. */
export function eddsaJws(description: string) {
  return Type.String({ pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{86}$', description });
}

export const Jwt = Type.String({
  pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
  description: 'HS256 JWT, header {"alg":"HS256","typ":"JWT","kid":"<kid of the signing key>"}, base64url without padding',
});
/** The tokens a client may present (validate's token, the access token as Bearer), as src/tokens/jwtHeader.ts reads them. */
export const PRESENTED_TOKEN = 'HS256 JWT, base64url without padding. Its header is either the one this service writes, ' +
  '{"alg":"HS256","typ":"JWT","kid":"<kid>"} byte for byte, or the published {"alg":"HS256","typ":"JWT"} without a kid, ' +
  'verified with the key that signs now (any member order and JSON spacing; typ may be left out). Any other header member ' +
  '(crit, jku, jwk, x5u, cty, ...) or algorithm is refused, and so is a header or payload that repeats a member name at any depth.';
export const Count = Type.Integer({ minimum: 0 });
export const Percentage = Type.Number({ minimum: 0, maximum: 100, description: 'remaining share of the quota, two decimals' });
export const Uuid = Type.String({ format: 'uuid' });

function literals(values: string[]): TSchema {
  const unique = [...new Set(values)];
  return unique.length === 1 ? Type.Literal(unique[0] as string) : Type.Union(unique.map((v) => Type.Literal(v)));
}

const codesOf = (bodies: unknown[]): string[] => bodies.map((b) => (b as { error: { code: string } }).error.code);

/** {success:false, error:{code, message}} with the codes of the bodies: get-token, sign-token, history, admin, health. */
export function codedErrorOf(bodies: unknown[]): TSchema {
  return Type.Object({
    success: Type.Literal(false),
    error: Type.Object({ code: literals(codesOf(bodies)), message: Type.String({ minLength: 1 }) }, closed),
  }, closed);
}

/** {success:false, message}: validate's refusals (published without codes, only the Turkish messages: docs/api.md#validate-and-sign). */
export const MessageError = Type.Object({ success: Type.Literal(false), message: Type.String({ minLength: 1 }) }, closed);
export const messageErrorOf = (): TSchema => MessageError;

/** validate's 400 for exhausted quota: the message and remainingQuota 0. */
export const QuotaExhaustedError = Type.Object({
  success: Type.Literal(false), message: Type.String({ minLength: 1 }), remainingQuota: Type.Literal(0),
}, closed);

/** 429 of get-token, sign-token and validate: retryAfter in whole seconds, as Retry-After. */
export const RateLimitedError = Type.Object({
  success: Type.Literal(false), message: Type.String({ minLength: 1 }), retryAfter: Type.Integer({ minimum: 1 }),
}, closed);

/** {success:false, error:{code, message}, timestamp}: check-quota, with the codes of the bodies. */
export function timestampedErrorOf(bodies: unknown[], extra: Record<string, TSchema> = {}): TSchema {
  return Type.Object({
    success: Type.Literal(false),
    error: Type.Object({ code: literals(codesOf(bodies)), message: Type.String({ minLength: 1 }) }, closed),
    ...extra,
    timestamp: Timestamp,
  }, closed);
}

/** One of a license's own limits: its figure, or null for the deployment's. */
function LimitPerMin(what: string): TSchema {
  return Type.Union([Type.Integer({ minimum: 0, maximum: 1e9 }), Type.Null()], { description: `${what}; null: the deployment's` });
}

/** A license as the admin API shows it: never the password or its hash. */
export const License = Type.Object({
  licenseKey: Uuid,
  firmaId: Type.String({ minLength: 1, description: 'the company identifier tokens carry as firma_id' }),
  organizationName: Type.String(),
  totalQuota: Count,
  usedQuota: Count,
  remainingQuota: Count,
  quotaPercentage: Percentage,
  expiryDate: Timestamp,
  isActive: Type.Boolean(),
  domains: Type.Array(Type.String(), { description: 'authorised origins (host names, "*.example.com" for subdomains); empty: any origin' }),
  webhookUrl: Type.Union([Type.String(), Type.Null()], { description: 'where the worker sends this license\'s events (docs/api.md#webhooks); null: none' }),
  webhookSecretSet: Type.Boolean({ description: 'a signing secret is set (the secret itself is never shown)' }),
  releasesPerDay: Type.Integer({ minimum: 0, description: 'units a day the holder may give back after a failed signing (POST /api/license/release); 0: none' }),
  packages: Type.Array(Type.Object({
    id: Type.Integer({ minimum: 1, description: 'the package\'s number on this license: 1, 2, 3... in the order bought' }),
    amount: Count,
    used: Count,
    remaining: Count,
    forfeited: Type.Integer({ minimum: 0, description: 'units left when the package expired, taken off totalQuota' }),
    expiresAt: Timestamp,
    createdAt: Timestamp,
    note: Type.Union([Type.String(), Type.Null()]),
  }, closed), {
    description: 'every purchase, oldest first, each with its own expiry: redemptions spend the one that expires first, and a '
      + 'package that expires with units left forfeits them (totalQuota falls by as much). A package not yet expired shows its live '
      + 'balance (the packages add up to the license\'s own figures); an expired one\'s forfeit shows once the usage worker has written it',
  }),
  rateLimits: Type.Object({
    getToken: LimitPerMin('tokens issued per license key a minute (RATE_GET_TOKEN_PER_MIN)'),
    signToken: LimitPerMin('sign tokens a minute (RATE_SIGN_TOKEN_PER_MIN)'),
    validate: LimitPerMin('validations and signs a minute, together (RATE_VALIDATE_PER_MIN)'),
    checkQuota: LimitPerMin('check-quota look-ups a minute per client address (RATE_CHECK_QUOTA_PER_MIN)'),
  }, {
    ...closed,
    description: 'the license\'s own rate limits (docs/api.md#limits): null where the deployment\'s default applies, 0 where '
      + 'the license has no limit; the RateLimit-Policy of its answers shows the one applied',
  }),
}, closed);

/** A ledger's sums beside the license's figures (the admin ledger and the holder's). */
export const LedgerTotals = Type.Object({
  purchased: Type.Integer({ minimum: 0 }),
  corrected: Type.Integer(),
  forfeited: Type.Integer({ minimum: 0 }),
  released: Type.Integer({ minimum: 0 }),
  redeemed: Type.Integer({ minimum: 0 }),
  totalQuota: Type.Integer({ minimum: 0, description: '= purchased + corrected - forfeited' }),
  usedQuota: Type.Integer({ minimum: 0, description: '= redeemed - released' }),
}, { ...closed, description: 'the ledger\'s sums beside the license\'s figures, read together from Postgres (behind the live figures by the worker lag)' });

/** A page of a paged admin list: its items and the cursor of the next page (null: the last). */
export function PageAnswer(item: TSchema) {
  return Type.Object({
    success: Type.Literal(true),
    data: Type.Object({ items: Type.Array(item), nextCursor: Type.Union([Type.String({ minLength: 1 }), Type.Null()]) }, closed),
  }, closed);
}

/** A sign token as the admin token list shows it. */
export const IssuedToken = Type.Object({
  tokenId: Uuid,
  imzaTipi: Type.Union([Type.Literal(0), Type.Literal(1)]),
  status: Type.Union([Type.Literal('issued'), Type.Literal('used'), Type.Literal('expired')], {
    description: 'issued: not used and still valid; used: redeemed; expired: not used, past its expiry',
  }),
  issuedAt: Timestamp,
  expiresAt: Type.Union([Timestamp, Type.Null()]),
  usedAt: Type.Union([Timestamp, Type.Null()]),
  origin: Type.Union([Type.String(), Type.Null()], { description: 'the origin the redemption named, as sent' }),
}, closed);

/** {success:true, data: License}: every admin success. */
export const LicenseAnswer = Type.Object({ success: Type.Literal(true), data: License }, closed);

/** The headers answers may carry, by name (ResponseDoc.headers); where each is sent is said where it is listed. */
export const responseHeaders: Record<string, { description: string; schema: TSchema }> = {
  'Retry-After': { description: 'whole seconds to wait before trying again', schema: Type.Integer({ minimum: 1 }) },
  'RateLimit-Policy': {
    description: 'the limit (IETF draft-ietf-httpapi-ratelimit-headers): `"<name>";q=<requests>;w=<seconds>`',
    schema: Type.String(), // each route's: the value it sends
  },
  RateLimit: {
    description: 'what is left of the limit in this window: `"<name>";r=<requests left>;t=<seconds until it resets>` (on a 429, r=0 and t is Retry-After)',
    schema: Type.String(), // each route's: its policies' names
  },
  Allow: { description: 'the methods this path serves', schema: Type.String() },
  Connection: { description: 'the connection is closed once the rest of the body is read (or after 2 s or 8 MiB of it)', schema: Type.String() },
  'WWW-Authenticate': { description: 'the scheme the route asks for', schema: Type.String() },
  'Cache-Control': { description: 'how long a browser may keep the answer', schema: Type.String() },
  'Content-Security-Policy': { description: 'what the page may load: only this service', schema: Type.String() },
  'Access-Control-Allow-Origin': { description: 'the Origin of the request, echoed (never `*`: no credentials are involved)', schema: Type.String() },
  'Access-Control-Expose-Headers': { description: 'the answer headers a page may read', schema: Type.String() },
  'Access-Control-Allow-Methods': { description: 'the methods this path serves', schema: Type.String() },
  'Access-Control-Allow-Headers': { description: 'the request headers a page may send', schema: Type.String() },
  'Access-Control-Max-Age': { description: 'seconds a browser may keep this preflight\'s answer', schema: Type.String() },
  Vary: {
    description: 'the request headers the answer depends on: Origin (CORS_ORIGINS is set), Accept (a page or JSON), Accept-Encoding (compressed or not)',
    schema: Type.String(),
  },
  ETag: {
    description: 'this version of the body, in this coding: sent back as If-None-Match, it gets 304 without a body while it is current',
    schema: Type.String({ pattern: '^"[A-Za-z0-9_-]+"$' }),
  },
  'Content-Encoding': { description: 'how the body is compressed', schema: Type.Union([Type.Literal('br'), Type.Literal('gzip')]) },
};
