import { ServiceUnavailable } from '../errors.js';
import type { HotLicenses } from '../licenses/hot.js';
import type { KeySpace } from '../redis/keys.js';
import type { RedisClient } from '../redis/client.js';
import { Outcome } from '../redis/outcomes.js';
import { runScript } from '../redis/scriptCall.js';
import { scripts } from '../redis/scriptBuilders.js';
import type { SignClaims } from './jwt.js';

export type ReleaseRefusal =
  | Outcome.NOT_REDEEMED | Outcome.ALREADY_RELEASED | Outcome.RELEASE_WINDOW_PASSED | Outcome.RELEASES_OFF
  | Outcome.RELEASE_ALLOWANCE_USED | Outcome.PACKAGE_EXPIRED | Outcome.IDEMPOTENCY_KEY_REUSED | Outcome.LICENSE_INACTIVE
  | Outcome.LICENSE_EXPIRED | Outcome.NO_SUCH_LICENSE;

export type ReleaseOutcome = { outcome: Outcome.DONE; usedQuota: number; remainingQuota: number } | { outcome: ReleaseRefusal };

/**
 * Gives a redeemed token's unit back (POST /api/license/release) through lua/release.lua:
 * one call, reloading the license's copy first if Redis does not hold it.
 */
export class SignTokenReleaser {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly hot: HotLicenses,
    /** RELEASE_WINDOW_SECONDS, in ms */
    readonly windowMs: number,
  ) {}

  async release(claims: SignClaims, reason: string, idempotencyKey: string | null): Promise<ReleaseOutcome> {
    const k = this.keys.forLicense(claims.firma_id);
    const now = Date.now();
    const call = scripts.release(k, {
      markers: k.markers(claims.exp * 1000).key, today: k.releasesToday(now), nowMs: now, tokenId: claims.token_id, firmaId: claims.firma_id,
      windowMs: this.windowMs, reason, idempotency: idempotencyKey === null ? null : k.releaseIdempotency(idempotencyKey, now),
    });
    const step = () => this.hot.restarts.fenced(() => runScript(this.redis, call));
    const missed = ([outcome]: [Outcome, number, number]) => outcome === Outcome.COPY_MISSING;
    let result: [Outcome, number, number] | null = await step();
    if (missed(result)) result = await this.hot.retryAfterMiss(claims.firma_id, step, missed);
    if (result === null) return { outcome: Outcome.NO_SUCH_LICENSE };
    const [outcome, used, remaining] = result;
    switch (outcome) {
      case Outcome.DONE:
        return { outcome, usedQuota: used, remainingQuota: remaining };
      case Outcome.NOT_REDEEMED:
      case Outcome.ALREADY_RELEASED:
      case Outcome.RELEASE_WINDOW_PASSED:
      case Outcome.RELEASES_OFF:
      case Outcome.RELEASE_ALLOWANCE_USED:
      case Outcome.PACKAGE_EXPIRED:
      case Outcome.IDEMPOTENCY_KEY_REUSED:
      case Outcome.LICENSE_INACTIVE:
      case Outcome.LICENSE_EXPIRED:
        return { outcome };
      default:
        throw new ServiceUnavailable(`release.lua: outcome ${Outcome[outcome]}`);
    }
  }
}
