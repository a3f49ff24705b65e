import type { Route } from '../http/server.js';
import { messageShape, type Reply } from '../http/reply.js';
import { originHost } from '../licenses/origin.js';
import { redeemBatcher, type Redemption } from '../redis/redeemBatcher.js';
import type { SignClaims } from '../tokens/jwt.js';
import { type ApiContext, RATE_WINDOW_MS } from './context.js';
import { rateLimited, redeemRefusals, refusal, ScriptResult, validateBadRequest, validateReplies, validateSuccess } from './results.js';
import { bodyParser, ValidateBody } from './schemas.js';

/** POST /api/license/validate: redeem a sign token, spending one unit of quota. */
export function validateRoute(ctx: ApiContext): Route {
  const parse = bodyParser(ValidateBody);
  const limit = ctx.config.rate.validate;
  const batcher = redeemBatcher(ctx.redis, RATE_WINDOW_MS, ctx.clock, ctx.restarts);

  async function redeem(claims: SignClaims, origin: string | null): Promise<Reply> {
    const k = ctx.keys.forLicense(claims.firma_id);
    const markers = k.markers(claims.exp * 1000);
    let redemption: Redemption = {
      keys: k, markers: markers.key, limit, host: origin === null ? '' : originHost(origin),
      tokenId: claims.token_id, firmaId: claims.firma_id, imzaTipi: claims.imza_tipi, iatMs: claims.iat * 1000, origin,
    };
    for (let attempt = 0; ; attempt++) {
      const [code, a, b] = await batcher.call(redemption);
      if (code === ScriptResult.OK) return validateSuccess(a, b);
      if (code === ScriptResult.RATE_LIMITED) return rateLimited(a);
      if (code === ScriptResult.TOKEN_UNKNOWN) {
        // We signed this token and it has not expired, yet Redis has no marker for it: Redis
        // lost data, and with it perhaps this token's redemption (its event may not have
        // reached Postgres). It cannot be proven unused, so it is refused (fail closed).
        return markers.expiresAt <= Date.now() ? validateReplies.TOKEN_EXPIRED : validateReplies.TOKEN_USED;
      }
      if (code !== ScriptResult.LICENSE_MISS) return refusal(redeemRefusals, code);
      if (redemption.limit !== 0) redemption = { ...redemption, limit: 0 }; // counted once per request
      if (!(await ctx.hot.repair(claims.firma_id, attempt))) return validateReplies.TOKEN_INVALID;
    }
  }

  return {
    method: 'post',
    path: '/api/license/validate',
    errors: messageShape,
    handler(req) {
      const parsed = parse(req.body);
      if (!parsed.ok) return validateBadRequest(parsed.field);
      const { token, origin } = parsed.value;
      if (token === undefined || token === null || token.trim() === '') return validateReplies.TOKEN_EMPTY;
      const verified = ctx.tokens.verifySignToken(token.trim());
      if (verified.claims === undefined) {
        return verified.expired ? validateReplies.TOKEN_EXPIRED : validateReplies.TOKEN_INVALID;
      }
      return redeem(verified.claims, origin ?? null);
    },
  };
}
