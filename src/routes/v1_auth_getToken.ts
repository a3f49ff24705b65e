import { Type } from '@sinclair/typebox';
import { reply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { Credentials } from '../licenses/hot.js';
import type { Count as MetricCount } from '../metrics/cells.js';
import { NOT_COUNTED, Outcome } from '../redis/outcomes.js';
import type { IssueRefusal } from '../tokens/issueSignToken.js';
import { ACCESS_TOKEN_SECONDS, SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';
import { EXAMPLE } from '../openapi/examples.js';
import { errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf, Count, Jwt, RateLimitedError } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import { Login } from './login.js';
import { authReplies, codedErrors, invalidRequest, rateLimited } from './replies.js';
import { bodyParser, ImzaTipi, Password, Text } from './schemas.js';

// get-token's key format is not published: any text here; a key that is not a UUID
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

const doc: RouteDoc = {
  summary: 'Issue an access token and a sign token',
  description: 'Trades the license key and password for an access token (15 minutes, for sign-token, history and the ledger) and a ' +
    'single-use sign token (5 minutes) for the desktop signing application. Every call issues a new sign token. Limits: ' +
    'tokens issued per license key (RATE_GET_TOKEN_PER_MIN, counting only logins whose password checked out; RateLimit policy ' +
    '"get-token"); failed attempts per license key from addresses not trusted there, and per key for each trusted address ' +
    '(RATE_GET_TOKEN_KEY_FAILURES_PER_MIN, "failed-logins-key"), and per client address (RATE_GET_TOKEN_FAILURES_PER_MIN, ' +
    '"failed-logins"). An address is trusted at a key once it got a token for it (GET_TOKEN_TRUST_DAYS). Past a failure ' +
    'budget an attempt is held for its turn, up to GET_TOKEN_MAX_DELAY_MS, and refused with 429 only beyond that. Only ' +
    'failures refuse: an attempt whose budget is full of logins still being checked waits for them, never refused for them.',
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
  const login = new Login(ctx);
  const issuedCount = [0, 1].map((t) => ctx.metrics.tokensIssued.series({ route: 'get-token', imza_tipi: String(t) }));

  /** The token pair, once the password checked out and the login was counted. */
  async function issue(cred: Credentials, imzaTipi: 0 | 1): Promise<Reply> {
    // counted per license key by the login (RATE_GET_TOKEN_PER_MIN), not per license here
    const issued = await ctx.issuer.issue(cred.firmaId, imzaTipi, NOT_COUNTED, cred.generation);
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

  return {
    method: 'post',
    path: '/api/v1/auth/get-token',
    errors: codedErrors,
    needsClientAddress: true,
    cors: true,
    noStore: true,
    doc: { ...doc, rateLimits: login.describe() },
    handler(req) {
      const parsed = parse(req.body);
      if (!parsed.ok) return invalidRequest(parsed.field);
      const { licenseKey, password, imzaTipi } = parsed.value;
      return login.answer(req, licenseKey, password, (cred) => issue(cred, imzaTipi));
    },
  };
}
