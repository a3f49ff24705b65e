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
  const failed = new FailedLogins(ctx.redis, ctx.keys, ctx.config.rate.getTokenFailures, ctx.clock);

  /** After the password checked out: the attempt's slot goes back to its address. */
  async function credentialsAccepted(req: Request, firmaId: string, imzaTipi: 0 | 1): Promise<Reply> {
    const [issued] = await Promise.all([issueSignToken(ctx, firmaId, imzaTipi, 0), failed.giveBack(req.clientAddress)]);
    if (issued === null) return issueReplies.INVALID_CREDENTIALS;
    if ('status' in issued) return issued;
    return reply(200, {
      success: true,
      accessToken: ctx.tokens.signAccessToken(firmaId, issued.iat),
      signToken: issued.signToken,
      accessExpiresIn: ACCESS_TOKEN_SECONDS,
      signExpiresIn: SIGN_TOKEN_SECONDS,
      remainingQuota: issued.remainingQuota,
    });
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
      const blockedMs = await failed.take(req.clientAddress);
      if (blockedMs > 0) return rateLimited(blockedMs);
      try {
        // keys are UUIDs (the admin API makes no other kind): another one cannot exist
        const licenseKey = canonicalKey(parsed.value.licenseKey);
        const cred = UUID.test(licenseKey) ? await ctx.hot.credentials(licenseKey, limit, RATE_WINDOW_MS) : null;
        if (typeof cred === 'number') return rateLimited(cred);
        if (cred === null) {
          // as slow as a wrong password, without spending a hash
          await ctx.passwords.burn(password);
          return issueReplies.INVALID_CREDENTIALS;
        }
        if (!(await ctx.passwords.verify(cred.passwordHash, password, req))) return issueReplies.INVALID_CREDENTIALS;
        return await credentialsAccepted(req, cred.firmaId, imzaTipi);
      } catch (err) {
        // the service failed, not the client: the attempt is not a failure
        void failed.giveBack(req.clientAddress).catch(() => {});
        throw err;
      }
    },
  };
}
