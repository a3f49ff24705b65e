import type { Request, Route } from '../http/server.js';
import { codeShape, reply, type Reply } from '../http/reply.js';
import { ACCESS_TOKEN_SECONDS, SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';
import { type ApiContext, canonicalKey, RATE_WINDOW_MS } from './context.js';
import { FailedLogins } from './failedLogins.js';
import { issueSignToken } from './issueSignToken.js';
import { issueBadRequest, issueReplies, rateLimited } from './results.js';
import { bodyParser, GetTokenBody, UUID } from './schemas.js';

/** POST /api/v1/auth/get-token: license key and password for an access token and a sign token. */
export function getTokenRoute(ctx: ApiContext): Route {
  const parse = bodyParser(GetTokenBody);
  const limit = ctx.config.rate.getToken;
  const failed = new FailedLogins(ctx.redis, ctx.keys, ctx.config.rate.getTokenFailures);

  /** A failed attempt answers as slowly for an unknown key as for a wrong password, and counts against the address. */
  async function refuse(req: Request, spend: Promise<unknown>): Promise<Reply> {
    await Promise.all([spend, failed.count(req.clientAddress)]);
    return issueReplies.INVALID_CREDENTIALS;
  }

  return {
    method: 'post',
    path: '/api/v1/auth/get-token',
    errors: codeShape,
    needsClientAddress: true,
    async handler(req) {
      const parsed = parse(req.body);
      if (!parsed.ok) return issueBadRequest(parsed.field);
      const { password, imzaTipi } = parsed.value;
      const blockedMs = await failed.blockedFor(req.clientAddress);
      if (blockedMs > 0) return rateLimited(blockedMs);
      // keys are UUIDs (the admin API makes no other kind): another one cannot exist
      const licenseKey = canonicalKey(parsed.value.licenseKey);
      const cred = UUID.test(licenseKey) ? await ctx.hot.credentials(licenseKey, limit, RATE_WINDOW_MS) : null;
      if (typeof cred === 'number') return rateLimited(cred);
      if (cred === null) return refuse(req, ctx.passwords.burn(password, req));
      const verified = ctx.passwords.verify(cred.passwordHash, password, req);
      if (!(await verified)) return refuse(req, verified);
      const issued = await issueSignToken(ctx, cred.firmaId, imzaTipi, 0);
      if (issued === null) return issueReplies.INVALID_CREDENTIALS;
      if ('status' in issued) return issued;
      return reply(200, {
        success: true,
        accessToken: ctx.tokens.signAccessToken(cred.firmaId, issued.iat),
        signToken: issued.signToken,
        accessExpiresIn: ACCESS_TOKEN_SECONDS,
        signExpiresIn: SIGN_TOKEN_SECONDS,
        remainingQuota: issued.remainingQuota,
      });
    },
  };
}
