import { Type } from '@sinclair/typebox';
import { reply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { Count as MetricCount } from '../metrics/cells.js';
import { Outcome } from '../redis/outcomes.js';
import type { IssueRefusal } from '../tokens/issueSignToken.js';
import { SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';
import { EXAMPLE } from '../openapi/examples.js';
import { errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf, Count, Jwt, RateLimitedError } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import { RateLimitFields } from './rateLimitFields.js';
import { authReplies, codedErrors, invalidRequest, rateLimited } from './replies.js';
import { bearer, bodyParser, ImzaTipi } from './schemas.js';

const SignTokenBody = Type.Object({ imzaTipi: ImzaTipi });

/** issue.lua's refusals, as sign-token answers them. */
const refusals: Record<IssueRefusal, Reply> = {
  [Outcome.LICENSE_EXPIRED]: authReplies.LICENSE_EXPIRED,
  [Outcome.LICENSE_INACTIVE]: authReplies.LICENSE_INACTIVE,
  [Outcome.NO_QUOTA_LEFT]: authReplies.INSUFFICIENT_QUOTA,
  [Outcome.NO_SUCH_LICENSE]: authReplies.INVALID_TOKEN, // the access token's license is gone
  [Outcome.TOKEN_REVOKED]: authReplies.INVALID_TOKEN, // issued before a password change or a deactivation
};

const SignTokenAnswer = Type.Object({
  success: Type.Literal(true), signToken: Jwt, signExpiresIn: Type.Literal(SIGN_TOKEN_SECONDS), remainingQuota: Count,
}, { additionalProperties: false });

/** The answers that carry the RateLimit fields: those that passed the count (src/openapi/routeDoc.ts RateLimitDoc). */
const LIMIT = {
  per: 'license', setting: 'RATE_SIGN_TOKEN_PER_MIN',
  statuses: {
    200: 'every',
    400: 'INSUFFICIENT_QUOTA (INVALID_REQUEST is refused before any look-up)',
    401: 'LICENSE_EXPIRED, LICENSE_INACTIVE, and INVALID_TOKEN for an access token revoked or of a license gone '
      + '(not for one missing, malformed or expired: refused before any look-up)',
    429: 'every',
  },
} as const;

const doc: RouteDoc = {
  summary: 'Issue one more sign token with an access token',
  description: 'One more single-use sign token (5 minutes) for the license the access token belongs to, without the password. ' +
    'A password change or a deactivation since the access token was issued revokes it (401 INVALID_TOKEN).',
  tags: ['public'],
  auth: 'accessToken',
  body: { schema: SignTokenBody, examples: [{ summary: 'İBYS signature', value: { imzaTipi: 1 } }] },
  responses: {
    200: {
      description: 'a new sign token, and the quota left when it was issued',
      schema: SignTokenAnswer,
      examples: [{
        summary: 'issued',
        value: { success: true, signToken: EXAMPLE.signToken, signExpiresIn: SIGN_TOKEN_SECONDS, remainingQuota: EXAMPLE.totalQuota - EXAMPLE.usedQuota },
      }],
    },
    ...errorResponses(codedErrorOf, [
      ['imzaTipi missing or not the integer 0 or 1', invalidRequest('imzaTipi')],
      ['no quota left', authReplies.INSUFFICIENT_QUOTA],
      ['the access token is missing, malformed, expired or revoked', authReplies.INVALID_TOKEN],
      ['the license is past its expiry date', authReplies.LICENSE_EXPIRED],
      ['the license is not active', authReplies.LICENSE_INACTIVE],
      ['too many sign tokens for this license (RATE_SIGN_TOKEN_PER_MIN)', rateLimited(42_000), RateLimitedError],
    ]),
  },
};

/** POST /api/v1/auth/sign-token: one more sign token for the access token's license, no password. */
export function signTokenRoute(ctx: RouteContext): Route {
  const parse = bodyParser(SignTokenBody);
  const limit = ctx.config.rate.signToken;
  const fields = new RateLimitFields('sign-token', limit, true);
  const issuedCount = [0, 1].map((t) => ctx.metrics.tokensIssued.series({ route: 'sign-token', imza_tipi: String(t) }));
  return {
    method: 'post',
    path: '/api/v1/auth/sign-token',
    errors: codedErrors,
    needsAuthorization: true,
    cors: true,
    noStore: true,
    doc: { ...doc, rateLimits: [fields.describe(LIMIT)] },
    async handler(req) {
      const token = bearer(req.authorization);
      const claims = token === null ? null : ctx.tokens.verifyAccessToken(token);
      if (claims === null) return authReplies.INVALID_TOKEN;
      const parsed = parse(req.body);
      if (!parsed.ok) return invalidRequest(parsed.field);
      // the access token's generation: a password change or a deactivation since revokes it
      const issued = await ctx.issuer.issue(claims.firma_id, parsed.value.imzaTipi, limit, String(claims.gen));
      if (issued.outcome === Outcome.OVER_RATE_LIMIT) return fields.on(rateLimited(issued.waitMs), issued.rate);
      if (issued.outcome !== Outcome.DONE) return fields.on(refusals[issued.outcome], issued.rate);
      (issuedCount[parsed.value.imzaTipi] as MetricCount).inc();
      return fields.on(reply(200, {
        success: true,
        signToken: issued.signToken,
        signExpiresIn: SIGN_TOKEN_SECONDS,
        remainingQuota: issued.remainingQuota,
      }), issued.rate);
    },
  };
}
