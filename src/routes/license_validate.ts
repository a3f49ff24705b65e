import { Type } from '@sinclair/typebox';
import { reply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { Count as MetricCount } from '../metrics/cells.js';
import { Outcome } from '../redis/scripts.js';
import type { RedeemOutcome, RedeemRefusal } from '../tokens/redeemSignToken.js';
import { EXAMPLE } from '../openapi/examples.js';
import { merge } from '../openapi/responses.js';
import { bodyOf, errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { Count, messageErrorOf, PRESENTED_TOKEN, QuotaExhaustedError, RateLimitedError } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import { RateLimitFields } from './rateLimitFields.js';
import { messageErrors, rateLimited } from './replies.js';
import { IdempotencyKey, idempotencyKeyHeader, jsonObject, Text, valueParser } from './schemas.js';
import { LicenseValidation, LicenseValidationBody, licenseTokenResponse, licenseValidationResponses } from './licenseToken.js';

/** A token: text that is not blank (trimmed before it is verified). */
const Token = Type.String({ format: 'text', maxLength: 4096, pattern: '\\S', description: `the sign token. ${PRESENTED_TOKEN}` });
const Origin = Type.Optional(Type.Union([Text({ maxLength: 1024 }), Type.Null()]));

// token emptiness is its own published error, so the parser lets a missing token, null and
// blank strings (whitespace, tabs and line breaks included) through to be answered as such
const ValidateBody = Type.Object({
  token: Type.Optional(Type.Union([Token, Type.String({ pattern: '^\\s*$', maxLength: 4096 }), Type.Null()])),
  origin: Origin,
});

/** A body the document calls valid: every other one is a 400 (Token boş olamaz for a token missing, null or blank). */
const DocumentedBody = Type.Object({ token: Token, origin: Origin });

// ---- validate: {success:false, message} -------------------------------------------------
//        status  message                                           condition
const replies = {
  TOKEN_EMPTY: reply(400, { success: false, message: 'Token boş olamaz' }), //              token empty
  TOKEN_EXPIRED: reply(401, { success: false, message: 'Token süresi dolmuş' }), //         sign token expired
  TOKEN_INVALID: reply(401, { success: false, message: 'Geçersiz token' }), //              malformed, bad signature, invalid
  TOKEN_USED: reply(400, { success: false, message: 'Bu token zaten kullanılmış. Yeni token alınız.' }), // redeemed
  ORIGIN_DENIED: reply(401, { success: false, message: 'Bu domain için yetki yok' }), //    origin not authorised
  QUOTA_EXHAUSTED: reply(400, { success: false, message: 'İmza kotası doldu', remainingQuota: 0 }), // quota used up
  // 429 RATE_LIMITED: rateLimited(ms)
  // not published (README "Idempotency-Key on validate"): the Idempotency-Key of another token's redemption
  KEY_REUSED: reply(422, { success: false, message: 'Bu işlem anahtarı başka bir token için kullanıldı.' }),
} as const;

/** redeem.lua's refusals, as validate answers them, and as /metrics counts them (license_validate_outcomes_total{outcome}). */
const refusals: Record<RedeemRefusal, readonly [Reply, string]> = {
  [Outcome.TOKEN_SPENT]: [replies.TOKEN_USED, 'already_used'],
  [Outcome.TOKEN_EXPIRED]: [replies.TOKEN_EXPIRED, 'token_expired'],
  [Outcome.LICENSE_EXPIRED]: [replies.TOKEN_INVALID, 'license_expired'], // an expired or inactive license: "invalid", as documented
  [Outcome.LICENSE_INACTIVE]: [replies.TOKEN_INVALID, 'license_inactive'],
  [Outcome.ORIGIN_NOT_ALLOWED]: [replies.ORIGIN_DENIED, 'origin_refused'],
  [Outcome.NO_QUOTA_LEFT]: [replies.QUOTA_EXHAUSTED, 'quota_exhausted'],
  [Outcome.NO_SUCH_LICENSE]: [replies.TOKEN_INVALID, 'unknown_license'],
  [Outcome.IDEMPOTENCY_KEY_REUSED]: [replies.KEY_REUSED, 'idempotency_key_reused'],
};

/** The outcomes validate finds before redeem.lua runs, as /metrics counts them. */
const early = ['redeemed', 'rate_limited', 'token_empty', 'token_invalid', 'token_expired', 'bad_request'] as const;

function badRequest(field: string): Reply {
  return reply(400, { success: false, message: `Geçersiz istek: ${field === 'body' ? 'gövde bir JSON nesnesi olmalı' : field}` });
}

const REDEEMED_MESSAGE = 'Token doğrulandı, imza kotası düşüldü';

/**
 * The answer of a redemption. A retry with the Idempotency-Key of an earlier one gets that
 * one's figures from the script, so its body is the first answer's, byte for byte.
 */
function redeemed(used: number, remaining: number): Reply {
  return {
    status: '200 OK',
    body: `{"success":true,"message":"${REDEEMED_MESSAGE}","usedQuota":${used},"remainingQuota":${remaining}}`,
  };
}

const Redeemed = Type.Object({
  success: Type.Literal(true), message: Type.Literal(REDEEMED_MESSAGE), usedQuota: Count, remainingQuota: Count,
}, { additionalProperties: false });

/** The answers that carry the RateLimit fields: those that passed the count (src/openapi/routeDoc.ts RateLimitDoc). */
const LIMIT = {
  per: 'company (the firma_id of the token)', setting: 'RATE_VALIDATE_PER_MIN',
  statuses: {
    200: 'every',
    400: 'a token already redeemed, or no quota left (not: token empty, a malformed body or Idempotency-Key, refused before any look-up)',
    401: 'a token whose signature verified: origin refused, license inactive, expired or gone, or the token expiring while checked '
      + '(not a token its verification refuses: malformed, bad signature, past its exp)',
    422: 'every',
    429: 'every',
  },
} as const;

const doc: RouteDoc = {
  summary: 'Redeem a sign token, spending one unit of quota',
  description: 'Called by the desktop signing application. Checks the token (format, signature, expiry, single use), the ' +
    'license (active, not expired), the origin against the license\'s domains, and the quota; on success marks the token used ' +
    'and deducts one unit. A refusal changes nothing but the rate-limit count. Errors carry only a Turkish message, as published.',
  tags: ['public'],
  auth: 'none',
  headers: {
    'Idempotency-Key': {
      description: '1-255 printable ASCII: a retry with the same key and token answers the first 200 again and spends nothing more',
      schema: IdempotencyKey,
    },
  },
  body: {
    schema: DocumentedBody,
    examples: [
      { summary: 'with the origin of the web application', value: { token: EXAMPLE.signToken, origin: 'https://eczane.ornek.com.tr' } },
      { summary: 'without an origin (licenses with no domains)', value: { token: EXAMPLE.signToken } },
    ],
  },
  responses: {
    200: {
      description: 'redeemed: the token is used and one unit of quota spent',
      schema: Redeemed,
      examples: [{ summary: 'redeemed', value: bodyOf(redeemed(EXAMPLE.usedQuota + 1, EXAMPLE.totalQuota - EXAMPLE.usedQuota - 1)) }],
    },
    ...errorResponses(messageErrorOf, [
      ['token missing, null or blank', replies.TOKEN_EMPTY],
      ['the body is not a JSON object, or a field of the wrong type', badRequest('origin')],
      ['a malformed Idempotency-Key header', badRequest('Idempotency-Key')],
      ['the token was already redeemed', replies.TOKEN_USED],
      ['the license has no quota left', replies.QUOTA_EXHAUSTED, QuotaExhaustedError],
      ['the sign token expired (5 minutes)', replies.TOKEN_EXPIRED],
      ['malformed, bad signature, a header other than the accepted ones, a repeated member, an access token, or the license is ' +
        'inactive, expired or gone', replies.TOKEN_INVALID],
      ['the origin is not one of the license\'s domains', replies.ORIGIN_DENIED],
      ['the Idempotency-Key was used for another token', replies.KEY_REUSED],
      ['too many redemptions for this company (RATE_VALIDATE_PER_MIN)', rateLimited(42_000), RateLimitedError],
    ]),
  },
};

/** Validate's document with license validation's body and answers beside its own. */
function withLicenseValidation(d: RouteDoc, rateLimits: RouteDoc['rateLimits']): RouteDoc {
  const responses = { ...d.responses };
  for (const [status, r] of Object.entries({ 200: licenseTokenResponse(), ...licenseValidationResponses() })) {
    responses[Number(status)] = merge(responses[Number(status)], r);
  }
  const body = d.body as NonNullable<RouteDoc['body']>;
  return {
    ...d,
    summary: 'Redeem a sign token, spending one unit of quota; or validate a license for a license token',
    description: `${d.description} With {licenseKey, password} instead (no token), it is license validation: the login of ` +
      'get-token (its budgets, limits and coded errors), answered with a license token, an EdDSA JWS of the license\'s state ' +
      'that a client verifies offline with /.well-known/jwks.json. It spends no quota. Answers the HTTP layer gives by itself ' +
      '(413, 503) are in validate\'s shape.',
    body: {
      schema: Type.Union([body.schema, LicenseValidationBody]),
      examples: [...body.examples, { summary: 'license validation', value: { licenseKey: EXAMPLE.licenseKey, password: EXAMPLE.password } }],
    },
    rateLimits,
    responses,
  };
}

/**
 * POST /api/license/validate: redeem a sign token, spending one unit of quota; or, for a
 * body with a licenseKey and no token, license validation (src/routes/licenseToken.ts).
 */
export function validateRoute(ctx: RouteContext): Route {
  const parse = valueParser(ValidateBody);
  const licenseValidation = new LicenseValidation(ctx);
  const limit = ctx.config.rate.validate;
  const fields = new RateLimitFields('validate', limit);
  // every outcome's series bound once: the request path adds to a number
  const counted = (outcome: string) => ctx.metrics.validateOutcomes.series({ outcome });
  const count = Object.fromEntries(early.map((o) => [o, counted(o)])) as Record<(typeof early)[number], MetricCount>;
  const refused: { reply: Reply; count: MetricCount }[] = [];
  for (const [outcome, [answer, label]] of Object.entries(refusals)) refused[Number(outcome)] = { reply: answer, count: counted(label) };

  function replyTo(out: RedeemOutcome): Reply {
    if (out.outcome === Outcome.DONE) {
      count.redeemed.inc();
      return fields.on(redeemed(out.usedQuota, out.remainingQuota), out.rate);
    }
    if (out.outcome === Outcome.OVER_RATE_LIMIT) {
      count.rate_limited.inc();
      return fields.on(rateLimited(out.waitMs), out.rate);
    }
    const r = refused[out.outcome] as { reply: Reply; count: MetricCount };
    r.count.inc();
    return fields.on(r.reply, out.rate);
  }

  function invalid(field: string): Reply {
    count.bad_request.inc();
    return badRequest(field);
  }

  return {
    method: 'post',
    path: '/api/license/validate',
    errors: messageErrors,
    cors: true,
    needsIdempotencyKey: true,
    needsClientAddress: true, // license validation's login budgets
    doc: withLicenseValidation(doc, [fields.describe(LIMIT), ...licenseValidation.rateLimits]),
    handler(req) {
      const idempotencyKey = idempotencyKeyHeader(req.idempotencyKey);
      if (idempotencyKey === false) return invalid('Idempotency-Key');
      const body = jsonObject(req.body);
      // the body decides: a token is a redemption, exactly as published; a key without one asks for a license token
      if (body !== null && !('token' in body) && 'licenseKey' in body) return licenseValidation.answer(req, body);
      const parsed = parse(body);
      if (!parsed.ok) return invalid(parsed.field);
      const { token, origin } = parsed.value;
      if (token === undefined || token === null || token.trim() === '') {
        count.token_empty.inc();
        return replies.TOKEN_EMPTY;
      }
      const verified = ctx.tokens.verifySignToken(token.trim());
      if (verified.claims === undefined) {
        if (verified.expired) count.token_expired.inc();
        else count.token_invalid.inc();
        return verified.expired ? replies.TOKEN_EXPIRED : replies.TOKEN_INVALID;
      }
      return ctx.redeemer.redeem(verified.claims, origin ?? null, limit, idempotencyKey).then(replyTo);
    },
  };
}
