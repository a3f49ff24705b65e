import { Type } from '@sinclair/typebox';
import { reply, type Reply } from '../http/reply.js';
import type { Request } from '../http/route.js';
import type { Credentials, LiveLicense } from '../licenses/hot.js';
import type { Count as MetricCount } from '../metrics/cells.js';
import { EXAMPLE } from '../openapi/examples.js';
import { errorResponses, type ResponseDoc } from '../openapi/routeDoc.js';
import { codedErrorOf, eddsaJws, RateLimitedError } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import { Login } from './login.js';
import { authReplies, invalidRequest, rateLimited, signingKeysMissing, SIGNING_KEYS_MISSING_WHEN } from './replies.js';
import { Password, Text, valueParser } from './schemas.js';
import { exampleSigner, type ArtefactSigner } from '../tokens/signingKeys.js';

// License validation: POST /api/License/validate with a license key and password (a body
// without `token`) answers a license token, an EdDSA JWS of the license's state that a
// desktop application checks offline against /.well-known/jwks.json until it expires. The
// login is get-token's, budgets and answers included; no quota is needed or spent. An instance
// without signing keys answers 503 before the login: no password hashed, no budget counted.

export const LicenseValidationBody = Type.Object({
  licenseKey: Text({ minLength: 1, maxLength: 128 }),
  password: Password,
});

/** A compact JWS with alg EdDSA. */
const LicenseJws = eddsaJws('an EdDSA JWS (verify with /.well-known/jwks.json)');

export const LicenseTokenAnswer = Type.Object({
  success: Type.Literal(true),
  licenseToken: LicenseJws,
  expiresIn: Type.Integer({ minimum: 1, description: 'seconds the token lives: LICENSE_TOKEN_SECONDS, or less when the license expires sooner' }),
}, { additionalProperties: false });

/** What a license token says, its members in this order (docs/api.md#license-tokens). */
function claimsJson(issuer: string, firmaId: string, live: LicenseState, iat: number, exp: number): string {
  return JSON.stringify({
    typ: 'license',
    iss: issuer,
    firma_id: firmaId,
    firma_adi: live.organizationName,
    active: true,
    license_exp: Math.floor(live.expiryMs / 1000),
    total_quota: live.totalQuota,
    used_quota: live.usedQuota,
    remaining_quota: Math.max(0, live.totalQuota - live.usedQuota),
    domains: live.domains,
    iat,
    exp,
  });
}

type LicenseState = Pick<LiveLicense, 'organizationName' | 'expiryMs' | 'totalQuota' | 'usedQuota' | 'domains'>;

/** The answers of license validation, for validate's document. */
export function licenseValidationResponses(): Record<number, ResponseDoc> {
  return errorResponses(codedErrorOf, [
    ['a field missing or of the wrong type', invalidRequest('password')],
    ['unknown license key or wrong password', authReplies.INVALID_CREDENTIALS],
    ['the license is past its expiry date', authReplies.LICENSE_EXPIRED],
    ['the license is not active', authReplies.LICENSE_INACTIVE],
    ['the license key\'s logins for this minute are used (RATE_GET_TOKEN_PER_MIN), or too many failed attempts (as get-token)', rateLimited(42_000), RateLimitedError],
    [`license validation: ${SIGNING_KEYS_MISSING_WHEN} (no password checked)`, signingKeysMissing.coded],
  ]);
}

/** A license token of the examples: signed with a published placeholder key, never a service's. */
function exampleToken(): string {
  const signer = exampleSigner();
  const iat = Math.floor(Date.parse('2026-03-01T09:30:00.000Z') / 1000);
  const live = {
    organizationName: EXAMPLE.organizationName, expiryMs: Date.parse(EXAMPLE.expiryDate), totalQuota: EXAMPLE.totalQuota,
    usedQuota: EXAMPLE.usedQuota, domains: [...EXAMPLE.domains],
  };
  return signer.sign(claimsJson('license-service', EXAMPLE.firmaId, live, iat, iat + 86_400));
}

/** The 200 of license validation, for validate's document. */
export function licenseTokenResponse(): ResponseDoc {
  return {
    description: 'license validation: the license token, and how long it lives',
    schema: LicenseTokenAnswer,
    examples: [{ summary: 'license validation ({licenseKey, password})', value: { success: true, licenseToken: exampleToken(), expiresIn: 86_400 } }],
  };
}

/** Answers license validation; built once per route. */
export class LicenseValidation {
  readonly #ctx: RouteContext;
  readonly #login: Login;
  readonly #parse = valueParser(LicenseValidationBody);
  readonly #issued: MetricCount;
  /**
   * The answer to a body that asks for license validation (already parsed as JSON). Chosen
   * here, once: without signing keys, the 503 itself, so no request asks the configuration.
   */
  readonly answer: (req: Request, body: Record<string, unknown>) => Reply | Promise<Reply>;

  constructor(ctx: RouteContext) {
    this.#ctx = ctx;
    this.#login = new Login(ctx);
    this.#issued = ctx.metrics.licenseTokensIssued.series({});
    const signer = ctx.artefacts;
    this.answer = signer === null ? () => signingKeysMissing.coded : (req, body) => this.#validate(signer, req, body);
  }

  get rateLimits() {
    return this.#login.describe();
  }

  #validate(signer: ArtefactSigner, req: Request, body: Record<string, unknown>): Reply | Promise<Reply> {
    const parsed = this.#parse(body);
    if (!parsed.ok) return invalidRequest(parsed.field);
    const { licenseKey, password } = parsed.value;
    return this.#login.answer(req, licenseKey, password, (cred) => this.#token(signer, cred, licenseKey.toLowerCase()));
  }

  async #token(signer: ArtefactSigner, cred: Credentials, licenseKey: string): Promise<Reply> {
    const live = await this.#ctx.hot.readFirma(cred.firmaId, licenseKey);
    if (live === null) return authReplies.INVALID_CREDENTIALS; // deleted since its credentials were read
    const nowMs = Date.now();
    if (live.expiryMs <= nowMs) return authReplies.LICENSE_EXPIRED;
    if (!live.isActive) return authReplies.LICENSE_INACTIVE;
    const iat = Math.floor(nowMs / 1000);
    // never past the license's own expiry
    const exp = Math.min(iat + this.#ctx.config.licenseTokenSeconds, Math.floor(live.expiryMs / 1000));
    if (exp <= iat) return authReplies.LICENSE_EXPIRED;
    const licenseToken = signer.sign(claimsJson(this.#ctx.config.jwtIssuer, cred.firmaId, live, iat, exp));
    this.#issued.inc();
    return reply(200, { success: true, licenseToken, expiresIn: exp - iat });
  }
}
