import { addressBucket } from '../http/clientAddress.js';
import type { Reply } from '../http/reply.js';
import type { Request } from '../http/route.js';
import type { Credentials } from '../licenses/hot.js';
import { CHECKS_POLL_MAX_MS, CHECKS_POLL_MS, sleep } from '../licenses/loginLimits.js';
import { ServiceUnavailable } from '../errors.js';
import type { RateLimitDoc } from '../openapi/routeDoc.js';
import { NO_GATE, type FailureGate } from '../redis/scriptReplies.js';
import { Outcome } from '../redis/outcomes.js';
import type { LoginAttempt } from '../redis/scriptBuilders.js';
import type { RouteContext } from './context.js';
import { RateLimitFields } from './rateLimitFields.js';
import { authReplies, rateLimited } from './replies.js';
import { canonicalKey, UUID } from './schemas.js';

// A login with a license key and password, as get-token and license validation make it:
// the key's credentials and failure budgets, the password, then the key's tokens-issued
// count (RATE_GET_TOKEN_PER_MIN). Both endpoints share the budgets, so a guess at one is a
// guess at the other.

/** The answers that carry each limit's RateLimit fields: those that passed its count (src/openapi/routeDoc.ts RateLimitDoc). */
const TOKEN_LIMIT = {
  per: 'license key, tokens issued (logins whose password checked out)', setting: 'RATE_GET_TOKEN_PER_MIN',
  statuses: {
    200: 'every',
    400: 'INSUFFICIENT_QUOTA (its credentials checked out; INVALID_REQUEST is refused before any look-up)',
    401: 'LICENSE_EXPIRED and LICENSE_INACTIVE (their credentials checked out), and an INVALID_CREDENTIALS whose password changed while it was checked',
    429: 'the 429 of a license key whose tokens for the window are issued',
  },
} as const;
const ADDRESS_LIMIT = {
  per: 'client address, failed attempts at keys it is not trusted at', setting: 'RATE_GET_TOKEN_FAILURES_PER_MIN',
  statuses: {
    401: 'INVALID_CREDENTIALS from an address not trusted at the key (unknown keys of any form included)',
    429: 'the 429 of a client address past its failure budget',
  },
} as const;
const KEY_FAILURES_LIMIT = {
  per: 'license key, failed attempts (addresses not trusted there together; each trusted address alone)', setting: 'RATE_GET_TOKEN_KEY_FAILURES_PER_MIN',
  statuses: {
    401: 'INVALID_CREDENTIALS from an address trusted at the key',
    429: 'the 429 of a license key past its failure budget',
  },
} as const;

/** What to answer once the password checked out and the key's token was counted; the caller's. */
export type Accepted = (cred: Credentials) => Promise<Reply>;

export class Login {
  readonly #ctx: RouteContext;
  readonly #tokenFields: RateLimitFields;
  readonly #addressFields: RateLimitFields;
  readonly #keyFields: RateLimitFields;

  constructor(ctx: RouteContext) {
    this.#ctx = ctx;
    const { rate } = ctx.config;
    this.#tokenFields = new RateLimitFields('get-token', rate.getToken, true);
    this.#addressFields = new RateLimitFields('failed-logins', rate.getTokenFailures);
    this.#keyFields = new RateLimitFields('failed-logins-key', rate.getTokenKeyFailures);
  }

  /** The RateLimit policies a login's answers carry, for a route's document. */
  describe(): RateLimitDoc[] {
    return [this.#tokenFields.describe(TOKEN_LIMIT), this.#addressFields.describe(ADDRESS_LIMIT), this.#keyFields.describe(KEY_FAILURES_LIMIT)];
  }

  /** The answer to a login: a refusal of the key, address or password, or what accepted answers (with the tokens-issued fields). */
  async answer(req: Request, rawKey: string, password: string, accepted: Accepted): Promise<Reply> {
    const client = addressBucket(req.clientAddressNow?.() ?? req.clientAddress);
    const licenseKey = canonicalKey(rawKey);
    const attempt: Attempt = { client, login: this.#ctx.logins.attempt(client), trusted: false, keyTaken: false, addressTaken: false };
    try {
      return await this.#answer(attempt, licenseKey, password, req, accepted);
    } catch (err) {
      // the service failed, not the client: the attempt is no failure, its places go back
      this.#release(attempt, licenseKey);
      throw err;
    }
  }

  /** The places an attempt that is no failure holds (refused by another budget, waiting, or failed by the service) go back. */
  #release(attempt: Attempt, licenseKey: string): void {
    const limits = this.#ctx.logins;
    if (attempt.keyTaken) void limits.endKey(licenseKey, attempt.login, attempt.trusted, 'give').catch(() => {});
    if (attempt.addressTaken) void limits.endAddress(attempt.login, 'give').catch(() => {});
    attempt.keyTaken = attempt.addressTaken = false;
  }

  /** The attempt failed: its places stay taken, no longer pending, before the client hears of it (the next attempt counts it). */
  async #failed(attempt: Attempt, licenseKey: string, answer: Reply): Promise<Reply> {
    const limits = this.#ctx.logins;
    const { keyTaken, addressTaken } = attempt;
    attempt.keyTaken = attempt.addressTaken = false;
    // a settle that fails leaves the place pending until it lapses (LoginAttempt.pendingMs): still a failure then
    await Promise.all([
      keyTaken ? limits.endKey(licenseKey, attempt.login, attempt.trusted, 'fail').catch(() => {}) : undefined,
      addressTaken ? limits.endAddress(attempt.login, 'fail').catch(() => {}) : undefined,
    ]);
    return answer;
  }

  /** A refusal by a failure budget, held back a while (a tarpit), with that budget's fields. */
  async #refused(attempt: Attempt, licenseKey: string, fields: RateLimitFields, refusedMs: number): Promise<Reply> {
    this.#release(attempt, licenseKey);
    const waitMs = await this.#ctx.logins.tarpit(refusedMs);
    return fields.on(rateLimited(waitMs), { remaining: 0, resetMs: waitMs });
  }

  /** After the password checked out: the token counted, the places given back, then the caller's answer. */
  async #credentialsAccepted(licenseKey: string, attempt: Attempt, cred: Credentials, accepted: Accepted): Promise<Reply> {
    const limits = this.#ctx.logins;
    const [granted] = await Promise.all([
      limits.granted(licenseKey, attempt.login, attempt.trusted, attempt.keyTaken),
      attempt.addressTaken ? limits.endAddress(attempt.login, 'give') : undefined,
    ]);
    attempt.keyTaken = attempt.addressTaken = false;
    if (granted.outcome === Outcome.OVER_RATE_LIMIT) return this.#tokenFields.on(rateLimited(granted.rate.resetMs), granted.rate);
    return this.#tokenFields.on(await accepted(cred), granted.rate);
  }

  /**
   * The key's credentials and its failure budget (one call: it says whether the address is
   * trusted there), then the address's budget unless it is. Every free place held by attempts
   * still being checked: nothing kept, ask again shortly, until places come back or the
   * attempt has waited long enough (LoginLimits.waited: then pending places count as taken).
   * Then held for its turn if a budget's failures say so, refused if they say so; then the
   * password.
   */
  async #places(attempt: Attempt, licenseKey: string, req: Request): Promise<Places | Reply> {
    const { hot, logins } = this.#ctx;
    const started = Date.now();
    for (let pollMs = CHECKS_POLL_MS; ; pollMs = Math.min(CHECKS_POLL_MAX_MS, pollMs * 1.5)) {
      // keys are UUIDs (the admin API makes no other kind): another one cannot exist
      const found = UUID.test(licenseKey) ? await hot.credentials(licenseKey, attempt.login) : null;
      if (found !== null && found.waitMs > 0) return this.#tokenFields.on(rateLimited(found.waitMs), found.rate);
      const cred = found?.credentials ?? null;
      const keyGate = found?.gate ?? NO_GATE;
      attempt.trusted = found?.trusted ?? false;
      attempt.keyTaken = cred !== null && taken(keyGate);
      let addressGate = NO_GATE;
      if (!attempt.trusted && !keyGate.waiting) {
        addressGate = await logins.takeAddress(attempt.login);
        attempt.addressTaken = taken(addressGate);
        if (addressGate.refusedMs > 0) return this.#refused(attempt, licenseKey, this.#addressFields, addressGate.refusedMs);
      }
      if (keyGate.refusedMs > 0) return this.#refused(attempt, licenseKey, this.#keyFields, keyGate.refusedMs);
      if (!keyGate.waiting && !addressGate.waiting) return { cred, keyGate, addressGate };
      this.#release(attempt, licenseKey);
      await sleep(pollMs);
      if (req.aborted) throw new ServiceUnavailable('client gone while its login waited for a place');
      logins.waited(attempt.login, Date.now() - started);
    }
  }

  async #answer(attempt: Attempt, licenseKey: string, password: string, req: Request, accepted: Accepted): Promise<Reply> {
    const ctx = this.#ctx;
    const places = await this.#places(attempt, licenseKey, req);
    if (!('cred' in places)) return places;
    const { cred, keyGate, addressGate } = places;
    const delayMs = Math.max(addressGate.delayMs, keyGate.delayMs);
    if (delayMs > 0) await sleep(delayMs);
    // what a failure says of the budget it counts toward: the address's, or a trusted address's own at the key
    const failed = attempt.trusted ? this.#keyFields.on(authReplies.INVALID_CREDENTIALS, keyGate.budget)
      : this.#addressFields.on(authReplies.INVALID_CREDENTIALS, addressGate === NO_GATE ? null : addressGate.budget);
    if (cred === null) {
      // as slow as a wrong password, without spending a hash
      await ctx.passwords.burn(password);
      return this.#failed(attempt, licenseKey, failed);
    }
    const right = await ctx.passwords.verify(cred.passwordHash, password, req);
    if (!right) return this.#failed(attempt, licenseKey, failed);
    return this.#credentialsAccepted(licenseKey, attempt, cred, accepted);
  }
}

/** A budget's answer that holds a place for the attempt (to give back or settle). */
const taken = (gate: FailureGate): boolean => gate !== NO_GATE && gate.refusedMs === 0 && !gate.waiting;

/** The places an attempt holds once it may go on: the credentials found (null: none), and each budget's answer. */
interface Places {
  cred: Credentials | null;
  keyGate: FailureGate;
  addressGate: FailureGate;
}

/** One attempt: where it came from, and which failure places it holds (given back unless it fails). */
interface Attempt {
  client: string;
  login: LoginAttempt;
  trusted: boolean;
  keyTaken: boolean;
  addressTaken: boolean;
}
