import { RATE_WINDOW_MS } from '../config.js';
import type { RedisClient } from '../redis/client.js';
import type { RedisClock } from '../redis/clock.js';
import type { KeySpace } from '../redis/keys.js';
import { runScript, scripts } from '../redis/scripts.js';

/** How long a blocked address waits for its 429: each of its connections then costs a second, not a round trip. */
const TARPIT_MS = 1000;
/** Blocked addresses remembered in this process, at most. */
const MAX_BLOCKED = 100_000;

/**
 * Failed get-tokens (unknown key or wrong password) per client address, shared by every
 * instance through Redis (lua/failures.lua): past RATE_GET_TOKEN_FAILURES_PER_MIN an
 * address is refused with 429 before any look-up or hash is spent on it. Per-key limits
 * cannot stop a spray of random keys; this can, from any one address. Each attempt takes
 * a slot up front and a successful one gives it back, so concurrent attempts are counted.
 *
 * A blocked address is remembered here until its window ends, so its further attempts
 * cost no Redis call, and its 429 is held back for TARPIT_MS: answered at once, a flood
 * of cheap refusals would still take the event loop from real customers (bench/README.md,
 * unknown-key flood).
 */
export class FailedLogins {
  private readonly blockedUntil = new Map<string, number>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly limit: number,
    private readonly clock: RedisClock,
  ) {}

  /**
   * Takes a slot for an attempt of a client (its address bucket, src/http/clientAddress.ts;
   * "" = unknown, not limited): 0 when it may go on, else the ms until it may try again
   * (resolved only after the tarpit wait).
   */
  async take(client: string): Promise<number> {
    if (this.limit === 0 || client === '') return 0;
    const now = Date.now();
    let until = this.blockedUntil.get(client) ?? 0;
    if (until <= now) {
      if (until !== 0) this.blockedUntil.delete(client);
      const waitMs = await runScript(this.redis, scripts.takeFailure(this.keys, client, this.limit, RATE_WINDOW_MS, this.clock.deadline(now)));
      if (waitMs === 0) return 0;
      until = now + waitMs;
      this.remember(client, until);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(TARPIT_MS, until - now)));
    return Math.max(1, until - Date.now());
  }

  /** The attempt succeeded: its slot is given back. */
  async giveBack(client: string): Promise<void> {
    if (this.limit === 0 || client === '') return;
    await runScript(this.redis, scripts.giveFailure(this.keys, client));
  }

  private remember(client: string, until: number): void {
    if (this.blockedUntil.size >= MAX_BLOCKED) {
      const oldest = this.blockedUntil.keys().next();
      if (!oldest.done) this.blockedUntil.delete(oldest.value);
    }
    this.blockedUntil.set(client, until);
  }
}
