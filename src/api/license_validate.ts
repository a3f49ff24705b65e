import type { Route } from '../http/server.js';
import { messageShape, type Reply } from '../http/reply.js';
import { originHost } from '../licenses/origin.js';
import { RedeemBatcher, type Redemption } from '../redis/redeemBatcher.js';
import type { SignClaims } from '../tokens/jwt.js';
import { type ApiContext, RATE_WINDOW_MS } from './context.js';
import { rateLimited, redeemRefusals, ScriptResult, validateBadRequest, validateReplies, validateSuccess } from './results.js';
import { bodyParser, ValidateBody } from './schemas.js';

/** POST /api/license/validate: redeem a sign token, spending one unit of quota. */
export function validateRoute(ctx: ApiContext): Route {
  const parse = bodyParser(ValidateBody);
  const limit = ctx.config.rate.validate;
  const batcher = new RedeemBatcher(ctx.redis, RATE_WINDOW_MS);

  /** A marker lost with Redis is rebuilt from the audit trail before the token may redeem. */
  async function reseedMarker(markers: { key: string; expiresAt: number }, claims: SignClaims): Promise<boolean> {
    if (markers.expiresAt <= Date.now()) return false;
    const status = await ctx.store.tokenStatus(claims.token_id);
    // a token signed by us but never persisted was issued just before Redis was lost: redeemable
    await ctx.redis.multi()
      .hsetnx(markers.key, claims.token_id, status === 'used' ? 'u' : 'i')
      .pexpireat(markers.key, markers.expiresAt)
      .exec();
    return true;
  }

  async function redeem(claims: SignClaims, origin: string | null): Promise<Reply> {
    const k = ctx.keys.forLicense(claims.firma_id);
    const markers = k.markers(claims.exp * 1000);
    const redemption: Redemption = {
      keys: k, markers: markers.key, limit, host: origin === null ? '' : originHost(origin),
      tokenId: claims.token_id, firmaId: claims.firma_id, imzaTipi: claims.imza_tipi, iatMs: claims.iat * 1000, origin,
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      const [code, a, b] = await batcher.redeem(redemption);
      if (code === ScriptResult.OK) return validateSuccess(a, b);
      if (code === ScriptResult.RATE_LIMITED) return rateLimited(a);
      redemption.limit = 0; // counted once per request
      if (code === ScriptResult.TOKEN_UNKNOWN) {
        if (!(await reseedMarker(markers, claims))) return validateReplies.TOKEN_EXPIRED;
      } else if (code === ScriptResult.LICENSE_MISS) {
        if (!(await ctx.hot.hydrateFirma(claims.firma_id))) return validateReplies.TOKEN_INVALID;
      } else {
        return redeemRefusals[code] as Reply;
      }
    }
    throw new Error('redeem did not settle after repairing Redis');
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
