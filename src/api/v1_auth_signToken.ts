import type { Route } from '../http/server.js';
import { codeShape, reply } from '../http/reply.js';
import { SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';
import type { ApiContext } from './context.js';
import { issueSignToken } from './issueSignToken.js';
import { issueBadRequest, issueReplies } from './results.js';
import { bearer, bodyParser, SignTokenBody } from './schemas.js';

/** POST /api/v1/auth/sign-token: one more sign token for the access token's license, no password. */
export function signTokenRoute(ctx: ApiContext): Route {
  const parse = bodyParser(SignTokenBody);
  return {
    method: 'post',
    path: '/api/v1/auth/sign-token',
    errors: codeShape,
    needsAuthorization: true,
    async handler(req) {
      const token = bearer(req.authorization);
      const claims = token === null ? null : ctx.tokens.verifyAccessToken(token);
      if (claims === null) return issueReplies.INVALID_TOKEN;
      const parsed = parse(req.body);
      if (!parsed.ok) return issueBadRequest(parsed.field);
      const issued = await issueSignToken(ctx, claims.firma_id, parsed.value.imzaTipi, ctx.config.rate.signToken);
      if (issued === null) return issueReplies.INVALID_TOKEN;
      if ('status' in issued) return issued;
      return reply(200, {
        success: true,
        signToken: issued.signToken,
        signExpiresIn: SIGN_TOKEN_SECONDS,
        remainingQuota: issued.remainingQuota,
      });
    },
  };
}
