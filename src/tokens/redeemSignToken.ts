import { ServiceUnavailable } from '../errors.js';
import type { HotLicenses } from '../licenses/hot.js';
import { originHost } from '../licenses/origin.js';
import type { KeySpace } from '../redis/keys.js';
import { Outcome, NOTHING_COUNTED, type RateCount } from '../redis/outcomes.js';
import type { Redeemed, Redemption } from '../redis/batchScripts.js';
import type { SlotBatcher } from '../redis/slotBatcher.js';
import { retryRepaired } from './retryRepaired.js';
import type { SignClaims } from './jwt.js';

export type RedeemRefusal =
  | Outcome.TOKEN_SPENT | Outcome.TOKEN_EXPIRED | Outcome.LICENSE_EXPIRED | Outcome.LICENSE_INACTIVE
  | Outcome.ORIGIN_NOT_ALLOWED | Outcome.NO_QUOTA_LEFT | Outcome.NO_SUCH_LICENSE | Outcome.IDEMPOTENCY_KEY_REUSED;

/** What happened, and what the rate-limit step counted (the RateLimit fields of the answer). */
export type RedeemOutcome = { rate: RateCount } & (
  /** receipt: a sign's receipt payload to sign ("" for validate) */
  | { outcome: Outcome.DONE; usedQuota: number; remainingQuota: number; receipt: string }
  | { outcome: Outcome.OVER_RATE_LIMIT; waitMs: number }
  | { outcome: RedeemRefusal }
);

/** Redeems sign tokens (validate, sign) through redeem.lua, batched per slot and turn: the only place quota is spent. */
export class SignTokenRedeemer {
  constructor(
    private readonly keys: KeySpace,
    private readonly batcher: SlotBatcher<Redemption, Redeemed>,
    private readonly hot: HotLicenses,
  ) {}

  /**
   * Redeems a verified token; rateLimit per window (0: off), unless the license has its own. idempotencyKey: the
   * client's Idempotency-Key (null: none); a retry with it gets the first answer again.
   * receiptPrefix: a sign's receipt up to its documents ("" for validate).
   */
  async redeem(
    claims: SignClaims, origin: string | null, rateLimit: number, idempotencyKey: string | null, receiptPrefix = '',
  ): Promise<RedeemOutcome> {
    const k = this.keys.forLicense(claims.firma_id);
    const markers = k.markers(claims.exp * 1000);
    const redemption: Redemption = {
      keys: k, markers: markers.key, limit: rateLimit, host: origin === null ? '' : originHost(origin),
      tokenId: claims.token_id, firmaId: claims.firma_id, imzaTipi: claims.imza_tipi, iatMs: claims.iat * 1000, origin,
      idempotency: idempotencyKey === null ? null : k.idempotency(idempotencyKey, Date.now()), receiptPrefix,
    };
    let result = await this.batcher.call(redemption);
    if (result[0] === Outcome.COPY_MISSING) {
      const repaired = await retryRepaired(this.hot, this.batcher, redemption);
      // no copy, so nothing counted
      if (repaired === null) return { outcome: Outcome.NO_SUCH_LICENSE, rate: NOTHING_COUNTED };
      result = repaired;
    }
    // the call that found the copy counted the request, with the license's limit
    const rate: RateCount = { remaining: result[3], resetMs: result[4], limit: result[5] };
    const [outcome, a, b, , , , receipt] = result;
    switch (outcome) {
      case Outcome.DONE:
        return { outcome, usedQuota: a, remainingQuota: b, receipt, rate };
      case Outcome.OVER_RATE_LIMIT:
        return { outcome, waitMs: a, rate };
      case Outcome.MARKER_MISSING:
        // We signed this token and it had not expired, yet Redis has no marker for it: Redis
        // lost data, and with it perhaps this token's redemption (its event may not have
        // reached Postgres). It cannot be proven unused, so it is refused (fail closed).
        return { outcome: markers.expiresAt <= Date.now() ? Outcome.TOKEN_EXPIRED : Outcome.TOKEN_SPENT, rate };
      case Outcome.TOKEN_SPENT:
      case Outcome.LICENSE_EXPIRED:
      case Outcome.LICENSE_INACTIVE:
      case Outcome.ORIGIN_NOT_ALLOWED:
      case Outcome.NO_QUOTA_LEFT:
      case Outcome.IDEMPOTENCY_KEY_REUSED:
        return { outcome, rate };
      default:
        // PAST_DEADLINE: the call changed nothing and its client has been answered already
        throw new ServiceUnavailable(`redeem.lua: outcome ${Outcome[outcome]}`);
    }
  }
}
