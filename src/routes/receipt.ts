import { Type, type Static } from '@sinclair/typebox';
import type { SignClaims } from '../tokens/jwt.js';
import { Text } from './schemas.js';

// The receipt of POST /api/Signature/sign, a compact JWS (src/tokens/signingKeys.ts
// ArtefactSigner) whose payload is, members in this order:
//   {"typ":"receipt","iss":…,"jti":<token id>,"firma_id":…,"imza_tipi":0|1,
//    "documents":[{"name":…,"sha256":<64 lower-case hex>}…],"iat":…,"used_quota":…,"remaining_quota":…}
// Node writes it up to the documents; redeem.lua adds the rest in the call that spends the
// unit (lua/includes/redeemToken.lua), so the figures signed are the redemption's own and a
// retry with its Idempotency-Key gets the very bytes back.

/** Documents one receipt names at most. */
export const SIGN_DOCUMENTS_MAX = 100;

const Sha256 = Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'SHA-256 of the document, 64 hex digits (any case; signed in lower case)' });

const SignedDocument = Type.Object({
  name: Text({ minLength: 1, maxLength: 255 }),
  sha256: Sha256,
}, { additionalProperties: false });

export const Documents = Type.Array(SignedDocument, {
  minItems: 1, maxItems: SIGN_DOCUMENTS_MAX,
  description: `the documents about to be signed, 1 to ${SIGN_DOCUMENTS_MAX}, in the order the receipt lists them`,
});

export type SignedDocuments = Static<typeof Documents>;

/** Writes the receipt prefixes of one issuer (JWT_ISSUER), its start rendered once. */
export class ReceiptPrefix {
  readonly #head: string;

  constructor(issuer: string) {
    this.#head = `{"typ":"receipt","iss":${JSON.stringify(issuer)},"jti":`;
  }

  /** The payload up to and including its documents, for redeem.lua to complete. */
  of(claims: SignClaims, documents: SignedDocuments): string {
    let out = `${this.#head}${JSON.stringify(claims.token_id)},"firma_id":${JSON.stringify(claims.firma_id)},"imza_tipi":${claims.imza_tipi},"documents":[`;
    for (let i = 0; i < documents.length; i++) {
      const d = documents[i] as SignedDocuments[number];
      out += `${i === 0 ? '' : ','}{"name":${JSON.stringify(d.name)},"sha256":"${d.sha256.toLowerCase()}"}`;
    }
    return `${out}]`;
  }
}
