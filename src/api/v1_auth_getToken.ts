import type { Route } from '../http/server.js';
import { codeShape, reply, type Reply } from '../http/reply.js';
import { ACCESS_TOKEN_SECONDS, SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';
import { type ApiContext, canonicalKey, RATE_WINDOW_MS } from './context.js';
import { issueSignToken } from './issueSignToken.js';
import { issueBadRequest, issueReplies, rateLimited, ScriptResult } from './results.js';
import { bodyParser, GetTokenBody } from './schemas.js';

/** POST /api/v1/auth/get-token: license key and password for an access token and a sign token. */
export function getTokenRoute(ctx: ApiContext): Route {
  const parse = bodyParser(GetTokenBody);
  const limit = ctx.config.rate.getToken;

  async function credentials(licenseKey: string): Promise<{ firmaId: string; hash: string } | Reply | null> {
    const found = await ctx.redis.credentials(
      ctx.keys.credentials(licenseKey), ctx.keys.rateGetToken(licenseKey), limit, RATE_WINDOW_MS,
    );
    if (found[0] === ScriptResult.RATE_LIMITED) return rateLimited(Number(found[1]));
    if (found[0] === ScriptResult.OK) return { firmaId: String(found[1]), hash: String(found[2]) };
    const row = await ctx.hot.hydrateKey(licenseKey);
    return row ? { firmaId: row.firmaId, hash: row.passwordHash } : null;
  }

  return {
    method: 'post',
    path: '/api/v1/auth/get-token',
    errors: codeShape,
    async handler(req) {
      const parsed = parse(req.body);
      if (!parsed.ok) return issueBadRequest(parsed.field);
      const { password, imzaTipi } = parsed.value;
      const licenseKey = canonicalKey(parsed.value.licenseKey);
      const cred = await credentials(licenseKey);
      if (cred === null) {
        await ctx.passwords.burn(password);
        return issueReplies.INVALID_CREDENTIALS;
      }
      if ('status' in cred) return cred;
      if (!(await ctx.passwords.verify(cred.hash, password))) return issueReplies.INVALID_CREDENTIALS;
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
