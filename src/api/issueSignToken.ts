import { randomUUID } from 'node:crypto';
import type { Reply } from '../http/reply.js';
import type { Issuance } from '../redis/issueBatcher.js';
import { SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';
import type { ApiContext } from './context.js';
import { issueRefusals, rateLimited, refusal, ScriptResult } from './results.js';

export interface Issued {
  signToken: string;
  remainingQuota: number;
  iat: number;
}


/**
 * Issues one sign token for a license through issue.lua, with the other
 * issuances of its slot and turn (one script call; more only after a Redis miss has been
 * repaired from Postgres, src/licenses/hot.ts repair). null: the license does not exist.
 */
export async function issueSignToken(
  ctx: ApiContext, firmaId: string, imzaTipi: 0 | 1, rateLimit: number,
): Promise<Issued | Reply | null> {
  const k = ctx.keys.forLicense(firmaId);
  const tokenId = randomUUID();
  const nowMs = Date.now();
  const iat = Math.floor(nowMs / 1000);
  const exp = iat + SIGN_TOKEN_SECONDS;
  const markers = k.markers(exp * 1000);
  let issuance: Issuance = {
    keys: k, markers: markers.key, markersExpireAt: markers.expiresAt, limit: rateLimit, tokenId, firmaId, imzaTipi, expMs: exp * 1000,
  };
  for (let attempt = 0; ; attempt++) {
    const [code, a, b] = await ctx.issuer.call(issuance);
    if (code === ScriptResult.OK) {
      const signToken = ctx.tokens.signSignToken({
        firma_id: firmaId, firma_adi: b, token_id: tokenId, imza_tipi: imzaTipi, iat, exp,
      });
      return { signToken, remainingQuota: a, iat };
    }
    if (code === ScriptResult.RATE_LIMITED) return rateLimited(a);
    if (code !== ScriptResult.LICENSE_MISS) return refusal(issueRefusals, code);
    if (!(await ctx.hot.repair(firmaId, attempt))) return null;
    if (issuance.limit !== 0) issuance = { ...issuance, limit: 0 }; // this request has been counted already
  }
}
