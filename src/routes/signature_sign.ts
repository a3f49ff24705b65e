import { Type } from '@sinclair/typebox';
import type { Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { EXAMPLE } from '../openapi/examples.js';
import { bodyOf, errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { Count, eddsaJws, messageErrorOf } from '../openapi/schemas.js';
import { exampleSigner, type ArtefactSigner } from '../tokens/signingKeys.js';
import type { RouteContext } from './context.js';
import { Documents, ReceiptPrefix, SIGN_DOCUMENTS_MAX } from './receipt.js';
import {
  badRequest, IDEMPOTENCY_KEY_DOC, Origin, ParsedToken, REDEEMED_MESSAGE, redemptionErrorRows, redemptionHandler, REDEMPTION_LIMIT,
  Token, type Redeemed as Redemption,
} from './redemption.js';
import { RateLimitFields } from './rateLimitFields.js';
import { messageErrors, signingKeysMissing, SIGNING_KEYS_MISSING_WHEN } from './replies.js';
import { IdempotencyKey, valueParser } from './schemas.js';

// POST /api/Signature/sign: validate's redemption (one unit, the same checks, answers and
// limit: src/routes/redemption.ts) that also returns a receipt, an Ed25519 JWS of the
// documents about to be signed and the redemption's figures, which a third party verifies
// offline against GET /.well-known/jwks.json (src/routes/receipt.ts has its payload). An
// instance without signing keys is built to answer 503 to every request, before the token is
// read: no unit spent, the token not burned, no rate-limit count, no Idempotency-Key kept.

/**
 * 100 documents of 255 characters fit, unless their names are mostly outside Latin
 * scripts (up to 3 bytes a character): the admin API's limit, below what the HTTP layer
 * is tested to refuse on every route (70 000 bytes).
 */
export const SIGN_BODY_LIMIT_BYTES = 65_536;

const SignBody = Type.Object({ token: ParsedToken, origin: Origin, documents: Documents });

/** A body the document calls valid: every other one is a 400. */
const DocumentedBody = Type.Object({ token: Token, origin: Origin, documents: Documents });

/** The compact JWS, header.payload.signature, base64url. */
const Receipt = eddsaJws(
  'the receipt: a compact JWS (header {"alg":"EdDSA","typ":"JWT","kid":…}, kid one of /.well-known/jwks.json) whose payload ' +
    'is {"typ":"receipt","iss","jti" (the sign token\'s token_id),"firma_id","imza_tipi","documents":[{"name","sha256"}…] (as sent, ' +
    'sha256 in lower case),"iat" (the redemption, seconds),"used_quota","remaining_quota"}, members in this order. Its digest, the ' +
    'hex SHA-256 of the payload bytes, is what the service keeps',
);

const Signed = Type.Object({
  success: Type.Literal(true), message: Type.Literal(REDEEMED_MESSAGE), usedQuota: Count, remainingQuota: Count, receipt: Receipt,
}, { additionalProperties: false });

/** The answer of a redemption: a retry with its Idempotency-Key signs the same payload, so it is byte for byte the first. */
function signed(signer: ArtefactSigner, r: Redemption): Reply {
  return {
    status: '200 OK',
    body: `{"success":true,"message":"${REDEEMED_MESSAGE}","usedQuota":${r.usedQuota},"remainingQuota":${r.remainingQuota},`
      + `"receipt":"${signer.sign(r.receipt)}"}`,
  };
}

const EXAMPLE_DOCUMENTS = [
  { name: 'recete-2026-0311.pdf', sha256: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08' },
  { name: 'hasta-onam-formu.pdf', sha256: '60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752' },
];

/** The example receipt, signed with the published placeholder key (the key of the JWKS example). */
function exampleAnswer(issuer: string): Reply {
  const used = EXAMPLE.usedQuota + 1;
  const prefix = new ReceiptPrefix(issuer).of(
    { token_id: EXAMPLE.tokenId, firma_id: EXAMPLE.firmaId, firma_adi: EXAMPLE.organizationName, imza_tipi: 0, iat: 1764075600, exp: 1764075900, typ: 'sign' },
    EXAMPLE_DOCUMENTS,
  );
  const receipt = `${prefix},"iat":1764075660,"used_quota":${used},"remaining_quota":${EXAMPLE.totalQuota - used}}`;
  return signed(exampleSigner(), { usedQuota: used, remainingQuota: EXAMPLE.totalQuota - used, receipt });
}

function docOf(issuer: string): RouteDoc {
  return {
    summary: 'Redeem a sign token for documents about to be signed, spending one unit of quota; answers a signed receipt',
    description: 'Called by the desktop signing application instead of validate when it wants proof of the signing: the same ' +
      'checks in the same order and the same answers as POST /api/license/validate (token, license, origin, quota; one unit ' +
      'spent; the same RATE_VALIDATE_PER_MIN count per company, shared with validate), and with the 200 a receipt naming the ' +
      `documents (1 to ${SIGN_DOCUMENTS_MAX}) and the quota after the redemption, which anyone verifies offline with the keys of ` +
      '/.well-known/jwks.json. The service keeps the receipt\'s digest and document count with the redemption. A refusal ' +
      'changes nothing but the rate-limit count. An instance without signing keys (SIGNING_KEYS_FILE or SIGNING_KEYS) ' +
      'answers every request 503, redeeming nothing: the token still redeems at validate, or here once the keys are set. ' +
      'Errors carry only a Turkish message, as validate\'s.',
    tags: ['public'],
    auth: 'none',
    headers: {
      'Idempotency-Key': {
        description: `${IDEMPOTENCY_KEY_DOC.description} (the identical receipt); the key of a validate, or of a sign with other ` +
          'documents, is 422',
        schema: IdempotencyKey,
      },
    },
    body: {
      schema: DocumentedBody,
      examples: [
        { summary: 'two documents, with the origin of the web application', value: { token: EXAMPLE.signToken, origin: 'https://eczane.ornek.com.tr', documents: EXAMPLE_DOCUMENTS } },
        { summary: 'one document, without an origin (licenses with no domains)', value: { token: EXAMPLE.signToken, documents: EXAMPLE_DOCUMENTS.slice(0, 1) } },
      ],
    },
    responses: {
      200: {
        description: 'redeemed: the token is used, one unit of quota spent, and the receipt signed',
        schema: Signed,
        examples: [{ summary: 'redeemed, with its receipt', value: bodyOf(exampleAnswer(issuer)) }],
      },
      ...errorResponses(messageErrorOf, [...redemptionErrorRows([
        ['the body is not a JSON object, or a field of the wrong type', badRequest('origin')],
        [`documents missing, empty, over ${SIGN_DOCUMENTS_MAX}, or one of them not {name: 1-255 characters of text, sha256: 64 hex ` +
          'digits} and nothing else', badRequest('documents')],
      ], 'the Idempotency-Key was used for another token, for this token at validate, or for it with other documents'),
      [`${SIGNING_KEYS_MISSING_WHEN} (no token read, no unit spent)`, signingKeysMissing.message]]),
    },
  };
}

/** POST /api/Signature/sign: redeem a sign token, spending one unit of quota, and sign a receipt of the documents. */
export function signRoute(ctx: RouteContext): Route {
  const fields = new RateLimitFields('validate', ctx.config.rate.validate, true);
  const prefix = new ReceiptPrefix(ctx.config.jwtIssuer);
  const parse = valueParser(SignBody, { plainBodies: true });
  const signer = ctx.artefacts;
  return {
    method: 'post',
    path: '/api/signature/sign',
    errors: messageErrors,
    cors: true,
    needsIdempotencyKey: true,
    bodyLimit: SIGN_BODY_LIMIT_BYTES,
    doc: { ...docOf(ctx.config.jwtIssuer), rateLimits: [fields.describe(REDEMPTION_LIMIT)] },
    // without a key to sign the receipt, nothing may be redeemed: the 503 is the whole handler
    handler: signer === null ? () => signingKeysMissing.message : redemptionHandler(ctx, fields, {
      parse,
      outcomes: ctx.metrics.signOutcomes,
      receiptPrefix: (body, claims) => prefix.of(claims, body.documents),
      redeemed: (r) => signed(signer, r),
    }),
  };
}
