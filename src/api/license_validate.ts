import type { Route } from '../http/server.js';
import { messageShape, type Reply } from '../http/reply.js';
import { originHost } from '../licenses/origin.js';
import type { SignClaims } from '../tokens/jwt.js';
import { type ApiContext, RATE_WINDOW_MS } from './context.js';
import { rateLimited, redeemRefusals, ScriptResult, validateBadRequest, validateReplies, validateSuccess } from './results.js';
import { bodyParser, ValidateBody } from './schemas.js';

/** POST /api/license/validate: redeem a sign token, spending one unit of quota. */
export function validateRoute(ctx: ApiContext): Route {
  const parse = bodyParser(ValidateBody);
  const limit = ctx.config.rate.validate;

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
    const host = origin === null ? '' : originHost(origin);
    let rate = limit;
    for (let attempt = 0; attempt < 3; attempt++) {
      const args: (string | number)[] = [
        k.license, markers.key, k.rateValidate, k.stream,
        Date.now(), rate, RATE_WINDOW_MS, host, claims.token_id, claims.firma_id, claims.imza_tipi, claims.iat * 1000,
      ];
      if (origin !== null) args.push(origin);
      const result = await ctx.redis.redeem(...args);
      const code = result[0] as ScriptResult;
      if (code === ScriptResult.OK) return validateSuccess(result[1] as number, result[2] as number);
      if (code === ScriptResult.RATE_LIMITED) return rateLimited(Number(result[1]));
      rate = 0; // counted once per request
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
