import { Type } from '@sinclair/typebox';
import { RATE_WINDOW_MS } from '../config.js';
import { addressBucket } from '../http/clientAddress.js';
import { reply, type Reply } from '../http/reply.js';
import type { Request, Route } from '../http/route.js';
import type { Credentials } from '../licenses/hot.js';
import type { Count as MetricCount } from '../metrics/cells.js';
import { Outcome } from '../redis/scripts.js';
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
const KEY_LIMIT = {
  per: 'license key', setting: 'RATE_GET_TOKEN_PER_MIN',
  statuses: {
    200: 'every',
    400: 'INSUFFICIENT_QUOTA (INVALID_REQUEST is refused before any look-up)',
    401: 'a license key of UUID form, the form of every key there is (a key of any other form is refused as unknown, without a look-up)',
    429: 'the 429 of a license key over its limit',
  },
} as const;
const ADDRESS_LIMIT = {
  per: 'client address, failed attempts only', setting: 'RATE_GET_TOKEN_FAILURES_PER_MIN',
  statuses: { 429: 'the 429 of a client address blocked for failed attempts (no look-up is made)' },
} as const;

const doc: RouteDoc = {
  summary: 'Issue an access token and a sign token',
  description: 'Trades the license key and password for an access token (15 minutes, for sign-token and history) and a ' +
    'single-use sign token (5 minutes) for the desktop signing application. Every call issues a new sign token.',
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
      ['too many requests for this license key', rateLimited(42_000), RateLimitedError],
      ['too many failed attempts (unknown key, wrong password) from this client address; answered after a second', rateLimited(42_000), RateLimitedError],
    ]),
  },
};

/** POST /api/v1/auth/get-token: license key and password for an access token and a sign token. */
export function getTokenRoute(ctx: RouteContext): Route {
  const parse = bodyParser(GetTokenBody);
  const limit = ctx.config.rate.getToken;
  const failed = ctx.failedLogins;
  // two limits: per license key (counted by lua/credentials.lua), and failed attempts per client address
  const fields = new RateLimitFields('get-token', limit);
  const addressFields = new RateLimitFields('failed-logins', ctx.config.rate.getTokenFailures);
  const issuedCount = [0, 1].map((t) => ctx.metrics.tokensIssued.series({ route: 'get-token', imza_tipi: String(t) }));

  /** After the password checked out: the attempt's slot goes back to its client. */
  async function credentialsAccepted(client: string, cred: Credentials, imzaTipi: 0 | 1): Promise<Reply> {
    const [issued] = await Promise.all([ctx.issuer.issue(cred.firmaId, imzaTipi, 0, cred.generation), failed.giveBack(client)]);
    if (issued.outcome === Outcome.OVER_RATE_LIMIT) return rateLimited(issued.waitMs);
    if (issued.outcome !== Outcome.DONE) return refusals[issued.outcome];
    (issuedCount[imzaTipi] as MetricCount).inc();
    return reply(200, {
      success: true,
      accessToken: ctx.tokens.signAccessToken(cred.firmaId, issued.iat, Number(cred.generation)),
      signToken: issued.signToken,
      accessExpiresIn: ACCESS_TOKEN_SECONDS,
      signExpiresIn: SIGN_TOKEN_SECONDS,
      remainingQuota: issued.remainingQuota,
    });
  }

  /** Once the client's address may try: the key's limit is counted, then its password checked. */
  async function answer(client: string, licenseKey: string, password: string, imzaTipi: 0 | 1, req: Request): Promise<Reply> {
    // keys are UUIDs (the admin API makes no other kind): another one cannot exist
    const found = UUID.test(licenseKey) ? await ctx.hot.credentials(licenseKey, limit, RATE_WINDOW_MS) : null;
    const rate = found?.rate ?? null; // a key that is no UUID is not counted
    if (found !== null && found.waitMs > 0) return fields.on(rateLimited(found.waitMs), rate);
    const cred = found?.credentials ?? null;
    if (cred === null) {
      // as slow as a wrong password, without spending a hash
      await ctx.passwords.burn(password);
      return fields.on(authReplies.INVALID_CREDENTIALS, rate);
    }
    if (!(await ctx.passwords.verify(cred.passwordHash, password, req))) return fields.on(authReplies.INVALID_CREDENTIALS, rate);
    return fields.on(await credentialsAccepted(client, cred, imzaTipi), rate);
  }

  return {
    method: 'post',
    path: '/api/v1/auth/get-token',
    errors: codedErrors,
    needsClientAddress: true,
    cors: true,
    noStore: true,
    doc: { ...doc, rateLimits: [fields.describe(KEY_LIMIT), addressFields.describe(ADDRESS_LIMIT)] },
    async handler(req) {
      const parsed = parse(req.body);
      if (!parsed.ok) return invalidRequest(parsed.field);
      const { password, imzaTipi } = parsed.value;
      const client = addressBucket(req.clientAddress);
      const blockedMs = await failed.take(client);
      if (blockedMs > 0) return addressFields.on(rateLimited(blockedMs), { remaining: 0, resetMs: blockedMs });
      try {
        return await answer(client, canonicalKey(parsed.value.licenseKey), password, imzaTipi, req);
      } catch (err) {
        // the service failed, not the client: the attempt is not a failure
        void failed.giveBack(client).catch(() => {});
        throw err;
      }
    },
  };
}
