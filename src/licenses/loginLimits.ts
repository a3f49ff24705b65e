import { randomBytes } from 'node:crypto';
import { RATE_WINDOW_MS, type Config } from '../config.js';
import type { RedisClient } from '../redis/client.js';
import type { RedisClock } from '../redis/clock.js';
import type { KeySpace } from '../redis/keys.js';
import { NO_GATE, type FailureGate, type LoginGranted } from '../redis/scriptReplies.js';
import { runScript } from '../redis/scriptCall.js';
import { scripts, type LoginAttempt } from '../redis/scriptBuilders.js';

/** How long a refused attempt waits for its 429: a flood of instant refusals would itself take the event loop from real customers. */
const TARPIT_MS = 1000;
/** Refused addresses remembered in this process, at most. */
const MAX_REFUSED = 100_000;
/** Addresses trusted at one license key, at most: the most recent logins are kept. */
export const MOST_TRUSTED_ADDRESSES = 64;
/**
 * How long an attempt may wait for places held by attempts still being checked, at least (or
 * GET_TOKEN_MAX_DELAY_MS when longer; with it at 0 an attempt is held for no turn, yet still
 * waits for checks in flight): a password check, its queue included, takes well under it
 * (PASSWORD_QUEUE_MAX bounds the queue), so the wait ends with those attempts, as places given
 * back or failures. Past it pending places count as taken.
 */
export const CHECKS_WAIT_MS = 5000;
/** A waiting attempt asks again after this long at first, then half as long again each time, up to CHECKS_POLL_MAX_MS. */
export const CHECKS_POLL_MS = 20;
/** A flood of waiting attempts asks Redis no more than this often each, like a client refused and retrying after its tarpit. */
export const CHECKS_POLL_MAX_MS = 250;
/**
 * A place stays pending at most this long past the longest hold: far beyond any password check, so only an attempt
 * whose process died is still pending then, and its place counts as a failure until the budget refills.
 */
const PENDING_BEYOND_HOLD_MS = 30_000;
/** Attempt ids: this process's tag and a count, unique among every process sharing the budgets. */
const PROCESS_TAG = randomBytes(6).toString('base64url');
let attempts = 0;

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
 * Each attempt takes its place before its password is hashed, pending until it is checked:
 * a successful one gives it back, a failed one keeps it, so concurrent guesses are counted.
 * Only failures hold attempts back or refuse them: an attempt that finds the free places
 * held by attempts still being checked waits for them (waitMs), never refused for them.
 * An address refused is remembered here until it may try again: its attempts at keys it is
 * not trusted at then cost no Redis call.
 */
export class LoginLimits {
  private readonly refusedUntil = new Map<string, number>();
  private readonly window = RATE_WINDOW_MS;
  private readonly tokensLimit: number;
  private readonly addressBudget: number;
  private readonly keyBudget: number;
  private readonly trustMs: number;
  private readonly maxDelayMs: number;
  /** how long an attempt waits for places held by attempts still being checked, before they count as taken */
  private readonly waitMs: number;

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
    this.waitMs = Math.max(CHECKS_WAIT_MS, this.maxDelayMs);
  }

  /** What credentials.lua is asked for an attempt from a client (its address bucket, "" = unknown). */
  attempt(client: string): LoginAttempt {
    return {
      tokensLimit: this.tokensLimit, windowMs: this.window, address: client, keyBudget: this.keyBudget,
      trustMs: this.trustMs, maxDelayMs: this.maxDelayMs, addressRefused: this.refusedMs(client) > 0,
      id: `${PROCESS_TAG}.${(attempts++).toString(36)}`, pendingMs: this.maxDelayMs + PENDING_BEYOND_HOLD_MS, force: false, waitedMs: 0,
    };
  }

  /**
   * Sets the attempt up to ask for its places again after waiting waitedMs for attempts still being checked: it may be
   * held for its turn what is left of GET_TOKEN_MAX_DELAY_MS, and once it has waited long enough pending places count.
   */
  waited(attempt: LoginAttempt, waitedMs: number): void {
    attempt.waitedMs = waitedMs;
    attempt.force = waitedMs >= this.waitMs;
  }

  /** The address's place for an attempt at a key it is not trusted at (no budget, or an unknown address: NO_GATE). */
  async takeAddress(attempt: LoginAttempt): Promise<FailureGate> {
    const client = attempt.address;
    if (this.addressBudget === 0 || client === '') return NO_GATE;
    const remembered = this.refusedMs(client);
    if (remembered > 0) return { delayMs: 0, refusedMs: remembered, waiting: false, budget: { remaining: 0, resetMs: remembered } };
    const now = Date.now();
    const gate = await runScript(this.redis, scripts.takeFailure(this.keys, this.keys.failures(client), this.addressBudget, this.window,
      this.clock.deadline(now), attempt));
    if (gate.refusedMs > 0) this.remember(client, now + gate.refusedMs);
    return gate;
  }

  /** The attempt at the address: 'give' its place back (it got through, or the service failed it), or keep it as a 'fail'ure. */
  async endAddress(attempt: LoginAttempt, op: 'give' | 'fail'): Promise<void> {
    if (this.addressBudget === 0 || attempt.address === '') return;
    await runScript(this.redis, scripts.endFailure(this.keys, this.keys.failures(attempt.address), op, this.addressBudget, this.window, attempt.id));
  }

  /**
   * The attempt at the key: 'give' its place back (the service failed it, or another budget refused it or made it wait),
   * or keep it as a 'fail'ure. (A login that checks out gives it back in loginGranted.lua.)
   */
  async endKey(licenseKey: string, attempt: LoginAttempt, trusted: boolean, op: 'give' | 'fail'): Promise<void> {
    if (this.keyBudget === 0) return;
    const budget = trusted ? this.keys.pairFailures(licenseKey, attempt.address) : this.keys.keyFailures(licenseKey);
    await runScript(this.redis, scripts.endFailure(this.keys, budget, op, this.keyBudget, this.window, attempt.id));
  }

  /**
   * The password checked out: the token is counted, the key's place given back when the
   * attempt took one (keyTaken: not when its credentials were served ungated), the address trusted (lua/loginGranted.lua).
   */
  granted(licenseKey: string, attempt: LoginAttempt, trusted: boolean, keyTaken: boolean): Promise<LoginGranted> {
    // keyBudget 0 tells the script no place was taken: giving one back would free a failure's
    const sent = keyTaken || attempt.keyBudget === 0 ? attempt : { ...attempt, keyBudget: 0 };
    return runScript(this.redis, scripts.loginGranted(this.keys, licenseKey, sent, trusted, MOST_TRUSTED_ADDRESSES));
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
