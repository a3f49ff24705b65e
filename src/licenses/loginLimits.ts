import { RATE_WINDOW_MS, type Config } from '../config.js';
import type { RedisClient } from '../redis/client.js';
import type { RedisClock } from '../redis/clock.js';
import type { KeySpace } from '../redis/keys.js';
import { NO_GATE, runScript, scripts, type FailureGate, type LoginAttempt, type LoginGranted } from '../redis/scripts.js';

/** How long a refused attempt waits for its 429: a flood of instant refusals would itself take the event loop from real customers. */
const TARPIT_MS = 1000;
/** Refused addresses remembered in this process, at most. */
const MAX_REFUSED = 100_000;
/** Addresses trusted at one license key, at most: the most recent logins are kept. */
export const MOST_TRUSTED_ADDRESSES = 64;

/**
 * get-token's limits, shared by every process through Redis. Correct credentials are counted
 * apart from failures, and failures are counted where they cannot hurt anyone else:
 *
 * - tokens issued per license key (RATE_GET_TOKEN_PER_MIN): only logins that got through,
 *   so a stranger who knows a key, without its password, cannot use them up;
 * - failures per license key (RATE_GET_TOKEN_KEY_FAILURES_PER_MIN), shared by the addresses
 *   not trusted at the key, and one such budget per key and trusted address: an address
 *   that got a token for the key within GET_TOKEN_TRUST_DAYS is held only to its own;
 * - failures per client address (RATE_GET_TOKEN_FAILURES_PER_MIN), across keys, for
 *   attempts at keys the address is not trusted at (unknown keys included).
 *
 * A failure budget slows down before it refuses (lua/includes/slowDown.lua): past it an
 * attempt is held for its turn, up to GET_TOKEN_MAX_DELAY_MS, and only refused beyond that.
 * Each attempt takes its place before its password is hashed and a successful one gives it
 * back, so concurrent guesses are counted. An address refused is remembered here until it
 * may try again: its attempts at keys it is not trusted at then cost no Redis call.
 */
export class LoginLimits {
  private readonly refusedUntil = new Map<string, number>();
  private readonly window = RATE_WINDOW_MS;
  private readonly tokensLimit: number;
  private readonly addressBudget: number;
  private readonly keyBudget: number;
  private readonly trustMs: number;
  private readonly maxDelayMs: number;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    config: Pick<Config, 'rate' | 'logins'>,
    private readonly clock: RedisClock,
  ) {
    this.tokensLimit = config.rate.getToken;
    this.addressBudget = config.rate.getTokenFailures;
    this.keyBudget = config.rate.getTokenKeyFailures;
    this.trustMs = config.logins.trustMs;
    this.maxDelayMs = config.logins.maxDelayMs;
  }

  /** What credentials.lua is asked for an attempt from a client (its address bucket, "" = unknown). */
  attempt(client: string): LoginAttempt {
    return {
      tokensLimit: this.tokensLimit, windowMs: this.window, address: client, keyBudget: this.keyBudget,
      trustMs: this.trustMs, maxDelayMs: this.maxDelayMs, addressRefused: this.refusedMs(client) > 0,
    };
  }

  /** The address's place for an attempt at a key it is not trusted at (no budget, or an unknown address: NO_GATE). */
  async takeAddress(client: string): Promise<FailureGate> {
    if (this.addressBudget === 0 || client === '') return NO_GATE;
    const remembered = this.refusedMs(client);
    if (remembered > 0) return { delayMs: 0, refusedMs: remembered, budget: { remaining: 0, resetMs: remembered } };
    const now = Date.now();
    const gate = await runScript(this.redis, scripts.takeFailure(this.keys.failures(client), this.addressBudget, this.window,
      this.maxDelayMs, this.clock.deadline(now)));
    if (gate.refusedMs > 0) this.remember(client, now + gate.refusedMs);
    return gate;
  }

  /** The attempt got through, or the service failed it: its place at the address goes back. */
  async giveAddress(client: string): Promise<void> {
    if (this.addressBudget === 0 || client === '') return;
    await runScript(this.redis, scripts.giveFailure(this.keys.failures(client), this.addressBudget, this.window));
  }

  /** The service failed an attempt, or another budget refused it: its place at the key goes back. */
  async giveKey(licenseKey: string, attempt: LoginAttempt, trusted: boolean): Promise<void> {
    if (this.keyBudget === 0) return;
    const budget = trusted ? this.keys.pairFailures(licenseKey, attempt.address) : this.keys.keyFailures(licenseKey);
    await runScript(this.redis, scripts.giveFailure(budget, this.keyBudget, this.window));
  }

  /** The password checked out: the token is counted, the key's place given back, the address trusted (lua/loginGranted.lua). */
  granted(licenseKey: string, attempt: LoginAttempt, trusted: boolean): Promise<LoginGranted> {
    return runScript(this.redis, scripts.loginGranted(this.keys, licenseKey, attempt, trusted, MOST_TRUSTED_ADDRESSES));
  }

  /** Holds a refusal back for up to TARPIT_MS; resolves the ms left until the client may try again. */
  async tarpit(refusedMs: number): Promise<number> {
    const until = Date.now() + refusedMs;
    await sleep(Math.min(TARPIT_MS, refusedMs));
    return Math.max(1, until - Date.now());
  }

  private refusedMs(client: string): number {
    const until = this.refusedUntil.get(client);
    if (until === undefined) return 0;
    const left = until - Date.now();
    if (left > 0) return left;
    this.refusedUntil.delete(client);
    return 0;
  }

  private remember(client: string, until: number): void {
    if (this.refusedUntil.size >= MAX_REFUSED) {
      const oldest = this.refusedUntil.keys().next();
      if (!oldest.done) this.refusedUntil.delete(oldest.value);
    }
    this.refusedUntil.set(client, until);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
