import { Type } from '@sinclair/typebox';
import type { Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { EXAMPLE } from '../openapi/examples.js';
import { bodyOf, errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { Count, messageErrorOf } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import { RateLimitFields } from './rateLimitFields.js';
import {
  badRequest, IDEMPOTENCY_KEY_DOC, Origin, ParsedToken, REDEEMED_MESSAGE, redemptionErrorRows, redemptionHandler, REDEMPTION_LIMIT, Token,
} from './redemption.js';
import { LicenseValidation, LicenseValidationBody, licenseTokenResponse, licenseValidationResponses } from './licenseToken.js';
import { messageErrors } from './replies.js';
import { IdempotencyKey, valueParser } from './schemas.js';
import { merge } from '../openapi/responses.js';

// POST /api/license/validate: the redemption of src/routes/redemption.ts, answered with the
// figures alone (POST /api/Signature/sign answers a receipt besides); or, for a body with a
// licenseKey and no token, license validation (src/routes/licenseToken.ts).

const ValidateBody = Type.Object({ token: ParsedToken, origin: Origin });

/** A body the document calls valid: every other one is a 400 (Token boş olamaz for a token missing, null or blank). */
const DocumentedBody = Type.Object({ token: Token, origin: Origin });

/**
 * The answer of a redemption. A retry with the Idempotency-Key of an earlier one gets that
 * one's figures from the script, so its body is the first answer's, byte for byte.
 */
function redeemed(used: number, remaining: number): Reply {
  return {
    status: '200 OK',
    body: `{"success":true,"message":"${REDEEMED_MESSAGE}","usedQuota":${used},"remainingQuota":${remaining}}`,
  };
}

const Redeemed = Type.Object({
  success: Type.Literal(true), message: Type.Literal(REDEEMED_MESSAGE), usedQuota: Count, remainingQuota: Count,
}, { additionalProperties: false });

const doc: RouteDoc = {
  summary: 'Redeem a sign token, spending one unit of quota',
  description: 'Called by the desktop signing application. Checks the token (format, signature, expiry, single use), the ' +
    'license (active, not expired), the origin against the license\'s domains, and the quota; on success marks the token used ' +
    'and deducts one unit. A refusal changes nothing but the rate-limit count. Errors carry only a Turkish message, as published.',
  tags: ['public'],
  auth: 'none',
  headers: { 'Idempotency-Key': { ...IDEMPOTENCY_KEY_DOC, schema: IdempotencyKey } },
  body: {
    schema: DocumentedBody,
    examples: [
      { summary: 'with the origin of the web application', value: { token: EXAMPLE.signToken, origin: 'https://eczane.ornek.com.tr' } },
      { summary: 'without an origin (licenses with no domains)', value: { token: EXAMPLE.signToken } },
    ],
  },
  responses: {
    200: {
      description: 'redeemed: the token is used and one unit of quota spent',
      schema: Redeemed,
      examples: [{ summary: 'redeemed', value: bodyOf(redeemed(EXAMPLE.usedQuota + 1, EXAMPLE.totalQuota - EXAMPLE.usedQuota - 1)) }],
    },
    ...errorResponses(messageErrorOf, redemptionErrorRows([['the body is not a JSON object, or a field of the wrong type', badRequest('origin')]])),
  },
};

/** Validate's document with license validation's body and answers beside its own. */
function withLicenseValidation(d: RouteDoc, rateLimits: RouteDoc['rateLimits']): RouteDoc {
  const responses = { ...d.responses };
  for (const [status, r] of Object.entries({ 200: licenseTokenResponse(), ...licenseValidationResponses() })) {
    responses[Number(status)] = merge(responses[Number(status)], r);
  }
  const body = d.body as NonNullable<RouteDoc['body']>;
  return {
    ...d,
    summary: 'Redeem a sign token, spending one unit of quota; or validate a license for a license token',
    description: `${d.description} With {licenseKey, password} instead (no token), it is license validation: the login of ` +
      'get-token (its budgets, limits and coded errors), answered with a license token, an EdDSA JWS of the license\'s state ' +
      'that a client verifies offline with /.well-known/jwks.json. It spends no quota. On an instance without signing keys ' +
      '(SIGNING_KEYS_FILE or SIGNING_KEYS) it answers 503 SERVICE_UNAVAILABLE in that coded shape, before the password is ' +
      'checked; redemptions are served as ever. Answers the HTTP layer gives by itself (413, 503) are in validate\'s shape.',
    body: {
      schema: Type.Union([body.schema, LicenseValidationBody]),
      examples: [...body.examples, { summary: 'license validation', value: { licenseKey: EXAMPLE.licenseKey, password: EXAMPLE.password } }],
    },
    rateLimits,
    responses,
  };
}

/** POST /api/license/validate: redeem a sign token, spending one unit of quota; or license validation. */
export function validateRoute(ctx: RouteContext): Route {
  const fields = new RateLimitFields('validate', ctx.config.rate.validate, true);
  const licenseValidation = new LicenseValidation(ctx);
  return {
    method: 'post',
    path: '/api/license/validate',
    errors: messageErrors,
    cors: true,
    needsIdempotencyKey: true,
    needsClientAddress: 'onDemand', // license validation's login budgets; a redemption does not read it
    doc: withLicenseValidation(doc, [fields.describe(REDEMPTION_LIMIT), ...licenseValidation.rateLimits]),
    handler: redemptionHandler(ctx, fields, {
      parse: valueParser(ValidateBody, { plainBodies: true }),
      // the body decides: a token is a redemption, exactly as published; a key without one asks for a license token
      other: (req, body) => (body !== null && !('token' in body) && 'licenseKey' in body ? licenseValidation.answer(req, body) : undefined),
      outcomes: ctx.metrics.validateOutcomes,
      receiptPrefix: () => '',
      redeemed: (r) => redeemed(r.usedQuota, r.remainingQuota),
    }),
  };
}
