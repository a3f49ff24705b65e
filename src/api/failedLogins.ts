import type { RedisClient } from '../redis/client.js';
import type { KeySpace } from '../redis/keys.js';
import { RATE_WINDOW_MS } from './context.js';

/**
 * Failed get-tokens (unknown key or wrong password) per client address, shared by every
 * instance through Redis (lua/failures.lua): past RATE_GET_TOKEN_FAILURES_PER_MIN an
 * address is refused with 429 before any look-up or hash is spent on it. Per-key limits
 * cannot stop a spray of random keys; this can, from any one address. Each attempt takes
 * a slot up front and a successful one gives it back, so concurrent attempts are counted.
 */
export class FailedLogins {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly limit: number,
  ) {}

  /** Takes a slot for an attempt: ms until the address may try again, 0 when it may now. */
  async take(address: string): Promise<number> {
    if (this.limit === 0 || address === '') return 0;
    const [code, ms] = await this.redis.failures(this.keys.failures(address), 'take', this.limit, RATE_WINDOW_MS);
    return code === 1 ? Number(ms) : 0;
  }

  /** The attempt succeeded: its slot is given back. */
  async giveBack(address: string): Promise<void> {
    if (this.limit === 0 || address === '') return;
    await this.redis.failures(this.keys.failures(address), 'give', this.limit, RATE_WINDOW_MS);
  }
}
