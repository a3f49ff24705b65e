import { Type } from '@sinclair/typebox';
import { addressBucket } from '../http/clientAddress.js';
import { reply, type Reply } from '../http/reply.js';
import type { Request, Route } from '../http/route.js';
import type { Credentials } from '../licenses/hot.js';
import type { Count as MetricCount } from '../metrics/cells.js';
import { sleep } from '../licenses/loginLimits.js';
import { NO_GATE, Outcome, type LoginAttempt } from '../redis/scripts.js';
import type { IssueRefusal } from '../tokens/issueSignToken.js';
import { ACCESS_TOKEN_SECONDS, SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';
import { EXAMPLE } from '../openapi/examples.js';
import { errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf, Count, Jwt, RateLimitedError } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import { RateLimitFields } from './rateLimitFields.js';
import { authReplies, codedErrors, invalidRequest, rateLimited } from './replies.js';
import { bodyParser, canonicalKey, ImzaTipi, Password, Text, UUID } from './schemas.js';

// get-token's key format is unspecified (spec): any text here; a key that is not a UUID
// cannot exist (the admin API only makes UUIDs), so it is refused as unknown.
const GetTokenBody = Type.Object({
  licenseKey: Text({ minLength: 1, maxLength: 128 }),
  password: Password,
  imzaTipi: ImzaTipi,
});

/** issue.lua's refusals, as get-token answers them. */
const refusals: Record<IssueRefusal, Reply> = {
  [Outcome.LICENSE_EXPIRED]: authReplies.LICENSE_EXPIRED,
  [Outcome.LICENSE_INACTIVE]: authReplies.LICENSE_INACTIVE,
  [Outcome.NO_QUOTA_LEFT]: authReplies.INSUFFICIENT_QUOTA,
  [Outcome.NO_SUCH_LICENSE]: authReplies.INVALID_CREDENTIALS, // deleted since its credentials were read
  [Outcome.TOKEN_REVOKED]: authReplies.INVALID_CREDENTIALS, // the password changed while it was being checked
};

const TokenPair = Type.Object({
  success: Type.Literal(true),
  accessToken: Jwt,
  signToken: Jwt,
  accessExpiresIn: Type.Literal(ACCESS_TOKEN_SECONDS),
  signExpiresIn: Type.Literal(SIGN_TOKEN_SECONDS),
  remainingQuota: Count,
}, { additionalProperties: false });

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

const doc: RouteDoc = {
  summary: 'Issue an access token and a sign token',
  description: 'Trades the license key and password for an access token (15 minutes, for sign-token and history) and a ' +
    'single-use sign token (5 minutes) for the desktop signing application. Every call issues a new sign token. Limits: ' +
    'tokens issued per license key (RATE_GET_TOKEN_PER_MIN, counting only logins whose password checked out; RateLimit policy ' +
    '"get-token"); failed attempts per license key from addresses not trusted there, and per key for each trusted address ' +
    '(RATE_GET_TOKEN_KEY_FAILURES_PER_MIN, "failed-logins-key"), and per client address (RATE_GET_TOKEN_FAILURES_PER_MIN, ' +
    '"failed-logins"). An address is trusted at a key once it got a token for it (GET_TOKEN_TRUST_DAYS). Past a failure ' +
    'budget an attempt is held for its turn, up to GET_TOKEN_MAX_DELAY_MS, and refused with 429 only beyond that.',
  tags: ['public'],
  auth: 'none',
  body: {
    schema: GetTokenBody,
    examples: [{ summary: 'Medula signature', value: { licenseKey: EXAMPLE.licenseKey, password: EXAMPLE.password, imzaTipi: 0 } }],
  },
  responses: {
    200: {
      description: 'the token pair, and the quota left when it was issued',
      schema: TokenPair,
      examples: [{
        summary: 'issued',
        value: {
          success: true, accessToken: EXAMPLE.accessToken, signToken: EXAMPLE.signToken, accessExpiresIn: ACCESS_TOKEN_SECONDS,
          signExpiresIn: SIGN_TOKEN_SECONDS, remainingQuota: EXAMPLE.totalQuota - EXAMPLE.usedQuota,
        },
      }],
    },
    ...errorResponses(codedErrorOf, [
      ['a field missing or of the wrong type (imzaTipi must be the integer 0 or 1)', invalidRequest('imzaTipi')],
      ['no quota left', authReplies.INSUFFICIENT_QUOTA],
      ['unknown license key or wrong password', authReplies.INVALID_CREDENTIALS],
      ['the license is past its expiry date', authReplies.LICENSE_EXPIRED],
      ['the license is not active', authReplies.LICENSE_INACTIVE],
      ['the license key\'s tokens for this minute are issued (RATE_GET_TOKEN_PER_MIN)', rateLimited(42_000), RateLimitedError],
      ['too many failed attempts at this license key, from addresses not trusted there or from this trusted address (held for up to GET_TOKEN_MAX_DELAY_MS first; answered after a second)', rateLimited(42_000), RateLimitedError],
      ['too many failed attempts (unknown key, wrong password) from this client address at keys it is not trusted at (held first; answered after a second)', rateLimited(42_000), RateLimitedError],
    ]),
  },
};

/** POST /api/v1/auth/get-token: license key and password for an access token and a sign token. */
export function getTokenRoute(ctx: RouteContext): Route {
  const parse = bodyParser(GetTokenBody);
  const limits = ctx.logins;
  const { rate } = ctx.config;
  // tokens issued per key (RATE_GET_TOKEN_PER_MIN); failed attempts per address, and per key (src/licenses/loginLimits.ts)
  const tokenFields = new RateLimitFields('get-token', rate.getToken);
  const addressFields = new RateLimitFields('failed-logins', rate.getTokenFailures);
  const keyFields = new RateLimitFields('failed-logins-key', rate.getTokenKeyFailures);
  const issuedCount = [0, 1].map((t) => ctx.metrics.tokensIssued.series({ route: 'get-token', imza_tipi: String(t) }));

  /** The places an attempt that is no failure holds (refused by another budget, or failed by the service) go back. */
  function release(attempt: Attempt, licenseKey: string): void {
    if (attempt.keyTaken) void limits.giveKey(licenseKey, attempt.login, attempt.trusted).catch(() => {});
    if (attempt.addressTaken) void limits.giveAddress(attempt.client).catch(() => {});
    attempt.keyTaken = attempt.addressTaken = false;
  }

  /** A refusal by a failure budget, held back a while (a tarpit), with that budget's fields. */
  async function refused(attempt: Attempt, licenseKey: string, fields: RateLimitFields, refusedMs: number): Promise<Reply> {
    release(attempt, licenseKey);
    const waitMs = await limits.tarpit(refusedMs);
    return fields.on(rateLimited(waitMs), { remaining: 0, resetMs: waitMs });
  }

  /** After the password checked out: the token counted, the places given back, then issued. */
  async function credentialsAccepted(licenseKey: string, attempt: Attempt, cred: Credentials, imzaTipi: 0 | 1): Promise<Reply> {
    const [granted] = await Promise.all([
      limits.granted(licenseKey, attempt.login, attempt.trusted),
      attempt.addressTaken ? limits.giveAddress(attempt.client) : undefined,
    ]);
    attempt.keyTaken = attempt.addressTaken = false;
    if (granted.outcome === Outcome.OVER_RATE_LIMIT) return tokenFields.on(rateLimited(granted.rate.resetMs), granted.rate);
    const issued = await ctx.issuer.issue(cred.firmaId, imzaTipi, 0, cred.generation);
    if (issued.outcome === Outcome.OVER_RATE_LIMIT) return tokenFields.on(rateLimited(issued.waitMs), granted.rate);
    if (issued.outcome !== Outcome.DONE) return tokenFields.on(refusals[issued.outcome], granted.rate);
    (issuedCount[imzaTipi] as MetricCount).inc();
    return tokenFields.on(reply(200, {
      success: true,
      accessToken: ctx.tokens.signAccessToken(cred.firmaId, issued.iat, Number(cred.generation)),
      signToken: issued.signToken,
      accessExpiresIn: ACCESS_TOKEN_SECONDS,
      signExpiresIn: SIGN_TOKEN_SECONDS,
      remainingQuota: issued.remainingQuota,
    }), granted.rate);
  }

  /**
   * The key's credentials and its failure budget first (one call: it says whether the address is
   * trusted there), then the address's budget unless it is; held for its turn if a budget says so;
   * then the password.
   */
  async function answer(attempt: Attempt, licenseKey: string, password: string, imzaTipi: 0 | 1, req: Request): Promise<Reply> {
    // keys are UUIDs (the admin API makes no other kind): another one cannot exist
    const found = UUID.test(licenseKey) ? await ctx.hot.credentials(licenseKey, attempt.login) : null;
    if (found !== null && found.waitMs > 0) return tokenFields.on(rateLimited(found.waitMs), found.rate);
    const cred = found?.credentials ?? null;
    const keyGate = found?.gate ?? NO_GATE;
    attempt.trusted = found?.trusted ?? false;
    attempt.keyTaken = cred !== null && keyGate !== NO_GATE && keyGate.refusedMs === 0;
    let addressGate = NO_GATE;
    if (!attempt.trusted) {
      addressGate = await limits.takeAddress(attempt.client);
      attempt.addressTaken = addressGate !== NO_GATE && addressGate.refusedMs === 0;
      if (addressGate.refusedMs > 0) return refused(attempt, licenseKey, addressFields, addressGate.refusedMs);
    }
    if (keyGate.refusedMs > 0) return refused(attempt, licenseKey, keyFields, keyGate.refusedMs);
    const delayMs = Math.max(addressGate.delayMs, keyGate.delayMs);
    if (delayMs > 0) await sleep(delayMs);
    // what a failure says of the budget it counts toward: the address's, or a trusted address's own at the key
    const failed = attempt.trusted ? keyFields.on(authReplies.INVALID_CREDENTIALS, keyGate.budget)
      : addressFields.on(authReplies.INVALID_CREDENTIALS, addressGate === NO_GATE ? null : addressGate.budget);
    if (cred === null) {
      // as slow as a wrong password, without spending a hash
      await ctx.passwords.burn(password);
      attempt.keyTaken = attempt.addressTaken = false; // a failure: the places stay taken
      return failed;
    }
    const right = await ctx.passwords.verify(cred.passwordHash, password, req);
    if (!right) {
      attempt.keyTaken = attempt.addressTaken = false;
      return failed;
    }
    return credentialsAccepted(licenseKey, attempt, cred, imzaTipi);
  }

  return {
    method: 'post',
    path: '/api/v1/auth/get-token',
    errors: codedErrors,
    needsClientAddress: true,
    cors: true,
    noStore: true,
    doc: { ...doc, rateLimits: [tokenFields.describe(TOKEN_LIMIT), addressFields.describe(ADDRESS_LIMIT), keyFields.describe(KEY_FAILURES_LIMIT)] },
    async handler(req) {
      const parsed = parse(req.body);
      if (!parsed.ok) return invalidRequest(parsed.field);
      const { password, imzaTipi } = parsed.value;
      const client = addressBucket(req.clientAddress);
      const licenseKey = canonicalKey(parsed.value.licenseKey);
      const attempt: Attempt = { client, login: limits.attempt(client), trusted: false, keyTaken: false, addressTaken: false };
      try {
        return await answer(attempt, licenseKey, password, imzaTipi, req);
      } catch (err) {
        // the service failed, not the client: the attempt is no failure, its places go back
        release(attempt, licenseKey);
        throw err;
      }
    },
  };
}

/** One get-token attempt: where it came from, and which failure places it holds (given back unless it fails). */
interface Attempt {
  client: string;
  login: LoginAttempt;
  trusted: boolean;
  keyTaken: boolean;
  addressTaken: boolean;
}
