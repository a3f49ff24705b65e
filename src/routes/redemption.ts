import { Type } from '@sinclair/typebox';
import type { Handler, Request } from '../http/route.js';
import { reply, type Reply } from '../http/reply.js';
import type { CounterFamily, Count as MetricCount } from '../metrics/cells.js';
import type { Case } from '../openapi/routeDoc.js';
import { PRESENTED_TOKEN, QuotaExhaustedError, RateLimitedError } from '../openapi/schemas.js';
import { Outcome } from '../redis/outcomes.js';
import type { SignClaims } from '../tokens/jwt.js';
import type { RedeemOutcome, RedeemRefusal } from '../tokens/redeemSignToken.js';
import type { RouteContext } from './context.js';
import type { RateLimitFields } from './rateLimitFields.js';
import { rateLimited } from './replies.js';
import { idempotencyKeyHeader, jsonObject, type Parsed, plainJson, Text } from './schemas.js';

// What the two endpoints that redeem a sign token share (POST /api/license/validate and
// POST /api/Signature/sign): the token and origin fields, the checks in their order, the
// published refusals and messages, the rate limit and the outcomes /metrics counts. Each
// endpoint adds its body's other fields and its 200.

/** A token: text that is not blank (trimmed before it is verified). */
export const Token = Type.String({ format: 'text', maxLength: 4096, pattern: '\\S', description: `the sign token. ${PRESENTED_TOKEN}` });
/** The origin's forms, as src/licenses/origin.ts originHost reads them (docs/api.md#origin-rules). */
const ORIGIN_FORMS = 'host, host:port or host/path, optionally after http:// or https://; the host name alone is matched ' +
  'against the license\'s domains (a license with none accepts any origin, or none). A malformed origin or another scheme ' +
  'never matches: 401 Bu domain için yetki yok on a license with domains';
export const Origin = Type.Optional(Type.Union([Text({ maxLength: 1024 }), Type.Null()], { description: ORIGIN_FORMS }));

// token emptiness is its own published error, so the parser lets a missing token, null and
// blank strings (whitespace, tabs and line breaks included) through to be answered as such
export const ParsedToken = Type.Optional(Type.Union([Token, Type.String({ pattern: '^\\s*$', maxLength: 4096 }), Type.Null()]));

// ---- {success:false, message} -----------------------------------------------------------
//        status  message                                           condition
export const redemptionReplies = {
  TOKEN_EMPTY: reply(400, { success: false, message: 'Token boş olamaz' }), //              token empty
  TOKEN_EXPIRED: reply(401, { success: false, message: 'Token süresi dolmuş' }), //         sign token expired
  TOKEN_INVALID: reply(401, { success: false, message: 'Geçersiz token' }), //              malformed, bad signature, invalid
  TOKEN_USED: reply(400, { success: false, message: 'Bu token zaten kullanılmış. Yeni token alınız.' }), // redeemed
  ORIGIN_DENIED: reply(401, { success: false, message: 'Bu domain için yetki yok' }), //    origin not authorised
  QUOTA_EXHAUSTED: reply(400, { success: false, message: 'İmza kotası doldu', remainingQuota: 0 }), // quota used up
  // 429 RATE_LIMITED: rateLimited(ms)
  // docs/api.md#idempotency: the Idempotency-Key of another redemption
  KEY_REUSED: reply(422, { success: false, message: 'Bu işlem anahtarı başka bir token için kullanıldı.' }),
} as const;

/** redeem.lua's refusals, as both endpoints answer them, and as /metrics counts them ({outcome}). */
const refusals: Record<RedeemRefusal, readonly [Reply, string]> = {
  [Outcome.TOKEN_SPENT]: [redemptionReplies.TOKEN_USED, 'already_used'],
  [Outcome.TOKEN_EXPIRED]: [redemptionReplies.TOKEN_EXPIRED, 'token_expired'],
  [Outcome.LICENSE_EXPIRED]: [redemptionReplies.TOKEN_INVALID, 'license_expired'], // an expired or inactive license: "invalid", as documented
  [Outcome.LICENSE_INACTIVE]: [redemptionReplies.TOKEN_INVALID, 'license_inactive'],
  [Outcome.ORIGIN_NOT_ALLOWED]: [redemptionReplies.ORIGIN_DENIED, 'origin_refused'],
  [Outcome.NO_QUOTA_LEFT]: [redemptionReplies.QUOTA_EXHAUSTED, 'quota_exhausted'],
  [Outcome.NO_SUCH_LICENSE]: [redemptionReplies.TOKEN_INVALID, 'unknown_license'],
  [Outcome.IDEMPOTENCY_KEY_REUSED]: [redemptionReplies.KEY_REUSED, 'idempotency_key_reused'],
};

/** The outcomes found before redeem.lua runs, as /metrics counts them. */
const early = ['redeemed', 'rate_limited', 'token_empty', 'token_invalid', 'token_expired', 'bad_request'] as const;

/** 400 naming the field: "body" when the body is not a JSON object. */
export function badRequest(field: string): Reply {
  return reply(400, { success: false, message: `Geçersiz istek: ${field === 'body' ? 'gövde bir JSON nesnesi olmalı' : field}` });
}

export const REDEEMED_MESSAGE = 'Token doğrulandı, imza kotası düşüldü';

/** The answers that carry the RateLimit fields: those that passed the count (src/openapi/routeDoc.ts RateLimitDoc). */
export const REDEMPTION_LIMIT = {
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

export const IDEMPOTENCY_KEY_DOC = {
  description: '1-255 printable ASCII: a retry with the same key and token answers the first 200 again and spends nothing more; ' +
    'once that redemption is released (POST /api/license/release), 400 already used, as without the key',
};

/**
 * Both endpoints' error rows (errorResponses, src/openapi/routeDoc.ts), the rows of their
 * body's fields after the first; keyReused: when the endpoint answers 422.
 */
export const redemptionErrorRows = (bodyRows: readonly Case[], keyReused = 'the Idempotency-Key was used for another token'): Case[] => [
  ['token missing, null or blank', redemptionReplies.TOKEN_EMPTY],
  ...bodyRows,
  ['a malformed Idempotency-Key header', badRequest('Idempotency-Key')],
  ['the token was already redeemed (a retry with its redemption\'s Idempotency-Key too, once that redemption is released)', redemptionReplies.TOKEN_USED],
  ['the license has no quota left', redemptionReplies.QUOTA_EXHAUSTED, QuotaExhaustedError],
  ['the sign token expired (5 minutes)', redemptionReplies.TOKEN_EXPIRED],
  ['malformed, bad signature, a header other than the accepted ones, a repeated member, an access token, or the license is ' +
    'inactive, expired or gone', redemptionReplies.TOKEN_INVALID],
  ['the origin is not one of the license\'s domains', redemptionReplies.ORIGIN_DENIED],
  ['the license has domains and the origin is malformed (a host no domain entry could name, user info, a bad port) or its scheme is ' +
    'neither http nor https', redemptionReplies.ORIGIN_DENIED],
  [keyReused, redemptionReplies.KEY_REUSED],
  ['too many redemptions for this company (RATE_VALIDATE_PER_MIN)', rateLimited(42_000), RateLimitedError],
];

/** A redemption as the endpoint answers it. */
export interface Redeemed {
  usedQuota: number;
  remainingQuota: number;
  /** sign: the receipt payload to sign ("" for validate) */
  receipt: string;
}

/** What one endpoint adds to the shared flow. */
export interface RedemptionEndpoint<B extends { token?: string | null; origin?: string | null }> {
  /** the body, already read as JSON (null: not a JSON object); plain: plainJson of its text */
  parse(body: Record<string, unknown> | null, plain: boolean): Parsed<B>;
  /** another request the path serves, told apart by its body (validate's license validation): its answer, else undefined */
  other?(req: Request, body: Record<string, unknown> | null): Reply | Promise<Reply> | undefined;
  /** where /metrics counts its outcomes ({outcome}) */
  outcomes: CounterFamily;
  /** the receipt's prefix redeem.lua completes ("" for none: validate) */
  receiptPrefix(body: B, claims: SignClaims): string;
  /** its 200 */
  redeemed(r: Redeemed): Reply;
}

/**
 * The handler of an endpoint that redeems a sign token: the Idempotency-Key, the body, an
 * empty token, its verification, then one redeem.lua call (rate limit, token, license,
 * origin, quota), each refusal answered and counted as published.
 */
export function redemptionHandler<B extends { token?: string | null; origin?: string | null }>(
  ctx: RouteContext, fields: RateLimitFields, endpoint: RedemptionEndpoint<B>,
): Handler {
  const limit = fields.limit;
  // every outcome's series bound once: the request path adds to a number
  const counted = (outcome: string) => endpoint.outcomes.series({ outcome });
  const count = Object.fromEntries(early.map((o) => [o, counted(o)])) as Record<(typeof early)[number], MetricCount>;
  const refused: { reply: Reply; count: MetricCount }[] = [];
  for (const [outcome, [answer, label]] of Object.entries(refusals)) refused[Number(outcome)] = { reply: answer, count: counted(label) };

  function replyTo(out: RedeemOutcome): Reply {
    if (out.outcome === Outcome.DONE) {
      count.redeemed.inc();
      return fields.on(endpoint.redeemed(out), out.rate);
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

  return (req) => {
    // another request of the path first: it reads no Idempotency-Key
    const body = jsonObject(req.body);
    const other = endpoint.other?.(req, body);
    if (other !== undefined) return other;
    const idempotencyKey = idempotencyKeyHeader(req.idempotencyKey);
    if (idempotencyKey === false) return invalid('Idempotency-Key');
    const parsed = endpoint.parse(body, plainJson(req.body));
    if (!parsed.ok) return invalid(parsed.field);
    const { token, origin } = parsed.value;
    if (token === undefined || token === null || token.trim() === '') {
      count.token_empty.inc();
      return redemptionReplies.TOKEN_EMPTY;
    }
    const verified = ctx.tokens.verifySignToken(token.trim());
    if (verified.claims === undefined) {
      if (verified.expired) count.token_expired.inc();
      else count.token_invalid.inc();
      return verified.expired ? redemptionReplies.TOKEN_EXPIRED : redemptionReplies.TOKEN_INVALID;
    }
    const prefix = endpoint.receiptPrefix(parsed.value, verified.claims);
    return ctx.redeemer.redeem(verified.claims, origin ?? null, limit, idempotencyKey, prefix).then(replyTo);
  };
}
