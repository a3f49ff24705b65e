import { ServiceUnavailable } from '../errors.js';
import type { HotLicenses } from '../licenses/hot.js';
import type { KeySpace } from '../redis/keys.js';
import { Outcome, NOTHING_COUNTED, type RateCount } from '../redis/outcomes.js';
import type { Issuance, Issued } from '../redis/batchScripts.js';
import type { SlotBatcher } from '../redis/slotBatcher.js';
import { retryRepaired } from './retryRepaired.js';
import { newTokenId } from './tokenId.js';
import { SIGN_TOKEN_SECONDS, type TokenService } from './jwt.js';

export type IssueRefusal =
  | Outcome.LICENSE_EXPIRED | Outcome.LICENSE_INACTIVE | Outcome.NO_QUOTA_LEFT | Outcome.NO_SUCH_LICENSE | Outcome.TOKEN_REVOKED;

/** What happened, and what the rate-limit step counted (the RateLimit fields of the answer). */
export type IssueOutcome = { rate: RateCount } & (
  | { outcome: Outcome.DONE; signToken: string; remainingQuota: number; iat: number }
  | { outcome: Outcome.OVER_RATE_LIMIT; waitMs: number }
  | { outcome: IssueRefusal }
);

/**
 * Issues sign tokens (get-token, sign-token) through issue.lua, each with the other
 * issuances of its slot and event-loop turn (src/redis/slotBatcher.ts).
 */
export class SignTokenIssuer {
  constructor(
    private readonly keys: KeySpace,
    private readonly batcher: SlotBatcher<Issuance, Issued>,
    private readonly tokens: TokenService,
    private readonly hot: HotLicenses,
    /** RELEASE_WINDOW_SECONDS in ms: a token's marker outlives it by this much, since a release reads it after the redemption */
    private readonly markerKeepMs = 0,
  ) {}

  /**
   * One sign token for a license; rateLimit per window (0: off) unless the license has its own
   * (NOT_COUNTED: not counted here, whatever the license says); generation:
   * the token generation of the caller's credentials ("": not checked; an older one than
   * the license's is TOKEN_REVOKED).
   */
  async issue(firmaId: string, imzaTipi: 0 | 1, rateLimit: number, generation: string): Promise<IssueOutcome> {
    const k = this.keys.forLicense(firmaId);
    const now = Date.now();
    const tokenId = newTokenId(now);
    const iat = Math.floor(now / 1000);
    const exp = iat + SIGN_TOKEN_SECONDS;
    const markers = k.markers(exp * 1000);
    const issuance: Issuance = {
      keys: k, markers: markers.key, markersExpireAt: markers.expiresAt + this.markerKeepMs, limit: rateLimit, tokenId, firmaId, imzaTipi, expMs: exp * 1000,
      generation,
    };
    let result = await this.batcher.call(issuance);
    if (result[0] === Outcome.COPY_MISSING) {
      const repaired = await retryRepaired(this.hot, this.batcher, issuance);
      // no copy, so nothing counted
      if (repaired === null) return { outcome: Outcome.NO_SUCH_LICENSE, rate: NOTHING_COUNTED };
      result = repaired;
    }
    // the call that found the copy counted the request, with the license's limit
    const rate: RateCount = { remaining: result[3], resetMs: result[4], limit: result[5] };
    const [outcome, a, b] = result;
    switch (outcome) {
      case Outcome.DONE: {
        const signToken = this.tokens.signSignToken({ firma_id: firmaId, firma_adi: b, token_id: tokenId, imza_tipi: imzaTipi, iat, exp });
        return { outcome, signToken, remainingQuota: a, iat, rate };
      }
      case Outcome.OVER_RATE_LIMIT:
        return { outcome, waitMs: a, rate };
      case Outcome.LICENSE_EXPIRED:
      case Outcome.LICENSE_INACTIVE:
      case Outcome.NO_QUOTA_LEFT:
      case Outcome.TOKEN_REVOKED:
        return { outcome, rate };
      default:
        // PAST_DEADLINE: the call changed nothing and its client has been answered already
        throw new ServiceUnavailable(`issue.lua: outcome ${Outcome[outcome]}`);
    }
  }
}
