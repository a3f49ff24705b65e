import { Type } from '@sinclair/typebox';
import { retryHeaders, retrySeconds, reply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { EXAMPLE } from '../openapi/examples.js';
import { bodyOf, errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { Count, messageErrorOf, RateLimitedError } from '../openapi/schemas.js';
import { Outcome } from '../redis/outcomes.js';
import type { ReleaseOutcome, ReleaseRefusal } from '../tokens/releaseSignToken.js';
import type { RouteContext } from './context.js';
import { badRequest, ParsedToken, redemptionReplies, Token } from './redemption.js';
import { messageErrors } from './replies.js';
import { IdempotencyKey, idempotencyKeyHeader, jsonObject, plainJson, Text, valueParser } from './schemas.js';

// POST /api/license/release: a unit back when signing fails. The desktop application redeemed
// a token (validate), then the signing failed (card pulled, wrong PIN): within
// RELEASE_WINDOW_SECONDS of the redemption it gives the token back, once, and the unit returns
// to the package it came from (lua/release.lua). Answered in validate's shape.

const ReleaseBody = Type.Object({ token: ParsedToken, reason: Type.Optional(Type.Union([Text({ maxLength: 500 }), Type.Null()])) });
const DocumentedBody = Type.Object({
  token: Token,
  reason: Type.Optional(Type.Union([Text({ maxLength: 500 }), Type.Null()], { description: 'why the signing failed, kept in the ledger' })),
});

export const RELEASED_MESSAGE = 'Token iade edildi, imza kotası geri verildi';

function released(used: number, remaining: number): Reply {
  return { status: '200 OK', body: `{"success":true,"message":"${RELEASED_MESSAGE}","usedQuota":${used},"remainingQuota":${remaining}}` };
}

/** 429 once the license's releases of the day are used: again at the next UTC day. */
function allowanceUsed(now = Date.now()): Reply {
  const seconds = retrySeconds(86_400_000 - (now % 86_400_000));
  return reply(429, { success: false, message: 'Bu lisansın bugünkü iade hakkı doldu', retryAfter: seconds }, retryHeaders(seconds));
}

// ---- {success:false, message} -----------------------------------------------------------
//        status  message                                                    outcome
const refusals: Record<Exclude<ReleaseRefusal, Outcome.RELEASE_ALLOWANCE_USED>, Reply> = {
  [Outcome.NOT_REDEEMED]: reply(400, { success: false, message: 'Bu token kullanılmamış; iade edilecek imza yok' }),
  [Outcome.ALREADY_RELEASED]: reply(400, { success: false, message: 'Bu token zaten iade edilmiş' }),
  [Outcome.RELEASE_WINDOW_PASSED]: reply(400, { success: false, message: 'İade süresi geçmiş' }),
  [Outcome.PACKAGE_EXPIRED]: reply(400, { success: false, message: 'İmzanın düştüğü paketin süresi dolmuş; iade edilemez' }),
  [Outcome.RELEASES_OFF]: reply(403, { success: false, message: 'Bu lisans için iade kapalı' }),
  [Outcome.IDEMPOTENCY_KEY_REUSED]: redemptionReplies.KEY_REUSED,
  [Outcome.LICENSE_INACTIVE]: redemptionReplies.TOKEN_INVALID,
  [Outcome.LICENSE_EXPIRED]: redemptionReplies.TOKEN_INVALID,
  [Outcome.NO_SUCH_LICENSE]: redemptionReplies.TOKEN_INVALID,
};

const Released = Type.Object({
  success: Type.Literal(true), message: Type.Literal(RELEASED_MESSAGE), usedQuota: Count, remainingQuota: Count,
}, { additionalProperties: false });

const doc: RouteDoc = {
  summary: 'Give a redeemed sign token\'s unit back after its signing failed',
  description: 'Within RELEASE_WINDOW_SECONDS (default 300) of its redemption, once per token, the unit goes back to the package '
    + 'it came from; the token stays used (validate and sign answer 400 already used, with or without the Idempotency-Key of its redemption) and shows as released in the history. The license\'s '
    + 'releasesPerDay (set by the admin; 0, the default, turns releases off) bounds them: the service cannot tell a real signing '
    + 'failure from a claimed one. Every release is a ledger entry. An Idempotency-Key works as on validate. A token past its '
    + 'expiry is still accepted for the release window.',
  tags: ['public'],
  auth: 'none',
  headers: { 'Idempotency-Key': { description: '1-255 printable ASCII: a retry with the same key and token answers the first 200 again', schema: IdempotencyKey } },
  body: { schema: DocumentedBody, examples: [{ summary: 'the card was pulled', value: { token: EXAMPLE.signToken, reason: 'kart çıkarıldı' } }] },
  responses: {
    200: {
      description: 'released: the unit is back',
      schema: Released,
      examples: [{ summary: 'released', value: bodyOf(released(EXAMPLE.usedQuota - 1, EXAMPLE.totalQuota - EXAMPLE.usedQuota + 1)) }],
    },
    ...errorResponses(messageErrorOf, [
      ['token missing, null or blank', redemptionReplies.TOKEN_EMPTY],
      ['the body is not a JSON object, or a field of the wrong type', badRequest('reason')],
      ['a malformed Idempotency-Key header', badRequest('Idempotency-Key')],
      ['the token was never redeemed', refusals[Outcome.NOT_REDEEMED]],
      ['the token was released before', refusals[Outcome.ALREADY_RELEASED]],
      ['more than RELEASE_WINDOW_SECONDS after its redemption', refusals[Outcome.RELEASE_WINDOW_PASSED]],
      ['the package the unit came from has expired: the unit would only be forfeited', refusals[Outcome.PACKAGE_EXPIRED]],
      ['the license allows no releases (releasesPerDay 0)', refusals[Outcome.RELEASES_OFF]],
      ['the token expired more than the release window ago', redemptionReplies.TOKEN_EXPIRED],
      ['malformed, bad signature, or the license is inactive, expired or gone', redemptionReplies.TOKEN_INVALID],
      ['the Idempotency-Key was used for another token', redemptionReplies.KEY_REUSED],
      ['the license\'s releases of the day are all used: again at the next UTC day', allowanceUsed(0), RateLimitedError],
    ]),
  },
};

function answer(out: ReleaseOutcome): Reply {
  if (out.outcome === Outcome.DONE) return released(out.usedQuota, out.remainingQuota);
  if (out.outcome === Outcome.RELEASE_ALLOWANCE_USED) return allowanceUsed();
  return refusals[out.outcome];
}

/** POST /api/license/release: give a redeemed token's unit back to its package. */
export function releaseRoute(ctx: RouteContext): Route {
  const parse = valueParser(ReleaseBody, { plainBodies: true });
  return {
    method: 'post',
    path: '/api/license/release',
    errors: messageErrors,
    cors: true,
    needsIdempotencyKey: true,
    doc,
    handler: (req) => {
      const idempotencyKey = idempotencyKeyHeader(req.idempotencyKey);
      if (idempotencyKey === false) return badRequest('Idempotency-Key');
      const parsed = parse(jsonObject(req.body), plainJson(req.body));
      if (!parsed.ok) return badRequest(parsed.field);
      const { token, reason } = parsed.value;
      if (token === undefined || token === null || token.trim() === '') return redemptionReplies.TOKEN_EMPTY;
      const verified = ctx.tokens.verifySignToken(token.trim(), ctx.releaser.windowMs);
      if (verified.claims === undefined) return verified.expired ? redemptionReplies.TOKEN_EXPIRED : redemptionReplies.TOKEN_INVALID;
      return ctx.releaser.release(verified.claims, reason ?? '', idempotencyKey).then(answer);
    },
  };
}
