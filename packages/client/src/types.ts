// The requests and answers of the public API (docs/api.md, Endpoints; /openapi.json, Public
// endpoints), declared here rather than derived from the routes' TypeBox schemas: those live
// beside ajv and the server's modules, which a browser bundle must not pull in, and the
// answers are built by the routes, not described by schemas. test/sdk/client.happy.test.ts checks
// these against what the server answers.

/** The signature type: 0 Medula, 1 İBYS. */
export type ImzaTipi = 0 | 1;

export interface GetTokenRequest {
  licenseKey: string;
  password: string;
  imzaTipi: ImzaTipi;
}

/** get-token's 200. */
export interface TokenPair {
  success: true;
  /** JWT, 900 s, the Bearer of sign-token and history */
  accessToken: string;
  /** JWT, 300 s, single use: what validate redeems */
  signToken: string;
  accessExpiresIn: number;
  signExpiresIn: number;
  /** remaining quota at issue time */
  remainingQuota: number;
}

export interface SignTokenRequest {
  imzaTipi: ImzaTipi;
}

/** sign-token's 200. */
export interface SignTokenAnswer {
  success: true;
  signToken: string;
  signExpiresIn: number;
  remainingQuota: number;
}

export interface ValidateRequest {
  /** the sign token */
  token: string;
  /** the requester's domain, checked against the license's authorised domains */
  origin?: string;
}

export interface ValidateOptions {
  /**
   * 1-255 printable ASCII: the same key with the same token answers the first 200 again and
   * spends nothing more, which makes the call safe to retry after a lost answer.
   */
  idempotencyKey?: string;
}

/** validate's 200: one unit of quota spent. */
export interface ValidateAnswer {
  success: true;
  message: string;
  usedQuota: number;
  remainingQuota: number;
}

/** License validation's body: a login as get-token's, answered with a license token. */
export interface LicenseValidationRequest {
  licenseKey: string;
  password: string;
}

/** License validation's 200: no quota spent. verifyLicenseToken reads the token offline. */
export interface LicenseTokenAnswer {
  success: true;
  /** compact JWS (EdDSA) of the license's state: LicenseTokenClaims */
  licenseToken: string;
  /** seconds the token lives: LICENSE_TOKEN_SECONDS, or less when the license expires sooner */
  expiresIn: number;
}

export interface SignRequest {
  /** the sign token */
  token: string;
  /** the requester's domain, checked against the license's authorised domains */
  origin?: string;
  /**
   * the documents about to be signed, 1-100, in the order the receipt lists them: a name of
   * 1-255 characters, a SHA-256 of 64 hex digits (either case; the receipt has lower case)
   */
  documents: readonly ReceiptDocument[];
}

/**
 * sign's options: the idempotency key as validate's. The same key, token and documents answer
 * the identical receipt again; the key of a validate, or of a sign with other documents, is 422.
 */
export type SignOptions = ValidateOptions;

/** sign's 200: validate's, one unit of quota spent, with the receipt (verifyReceipt reads it offline). */
export interface SignAnswer extends ValidateAnswer {
  /** compact JWS (EdDSA) naming the documents and the figures after this redemption: ReceiptClaims */
  receipt: string;
}

export interface ReleaseRequest {
  /** the sign token a validate or sign redeemed */
  token: string;
  /** why the signing failed, up to 500 characters: kept in the license's ledger */
  reason?: string;
}

/**
 * release's options: an idempotency key as validate's (the same key and token answer the
 * first 200 again, which makes a retry after a lost answer safe).
 */
export type ReleaseOptions = ValidateOptions;

/** release's 200: the unit is back in the package it came from; the figures after it. */
export interface ReleaseAnswer {
  success: true;
  message: string;
  usedQuota: number;
  remainingQuota: number;
}

/** check-quota's `data`. */
export interface QuotaInfo {
  licenseKey: string;
  remainingQuota: number;
  totalQuota: number;
  usedQuota: number;
  /** remaining share, 0-100, two decimals */
  quotaPercentage: number;
  /** ISO 8601, UTC */
  expiryDate: string;
  isActive: boolean;
  organizationName: string;
}

/** check-quota's 200. */
export interface CheckQuotaAnswer {
  success: true;
  data: QuotaInfo;
  message: string;
  /** ISO 8601, UTC */
  timestamp: string;
}

/** One redemption of the license (history). */
export interface HistoryItem {
  tokenId: string;
  imzaTipi: ImzaTipi;
  /** ISO 8601, UTC */
  usedAt: string;
  /** as the client sent it, null when none */
  origin: string | null;
  /** a redemption by POST /api/Signature/sign: how many documents its receipt names (absent for validate's) */
  documents?: number;
  /** ISO 8601, UTC: its unit was given back after a failed signing (release); absent when not released */
  releasedAt?: string;
}

/** One page of history, newest first; nextCursor null on the last page. */
export interface HistoryPage {
  items: HistoryItem[];
  nextCursor: string | null;
}

export interface HistoryOptions {
  /** items per page, 1-500 (the service's default: 50) */
  limit?: number;
  /** start after this cursor (a page's nextCursor) instead of at the newest */
  cursor?: string;
}

/** A package of the license: one purchase (or the opening balance of a license older than packages), with its own expiry. */
export interface LedgerPackage {
  /** 1, 2, 3... in the order of purchase */
  id: number;
  amount: number;
  used: number;
  /** amount - used - forfeited: 0 once it has forfeited */
  remaining: number;
  /** what it left unspent when it expired */
  forfeited: number;
  /** ISO 8601, UTC: when its units left are forfeited */
  expiresAt: string;
  /** ISO 8601, UTC */
  createdAt: string;
}

/** An entry of the license's ledger: a change to its balance. */
export interface LedgerEntry {
  kind: 'purchase' | 'forfeit' | 'release' | 'correction';
  /** ISO 8601, UTC */
  at: string;
  /** what it added to the balance: a forfeit is negative */
  amount: number;
  packageId: number | null;
}

/** What the ledger sums to, beside the license's figures: totalQuota = purchased + corrected - forfeited, usedQuota = redeemed - released. */
export interface LedgerTotals {
  purchased: number;
  corrected: number;
  forfeited: number;
  released: number;
  redeemed: number;
  totalQuota: number;
  usedQuota: number;
}

/** One page of the ledger: every package (newest first), a page of entries (newest first), the totals. */
export interface LedgerPage {
  packages: LedgerPackage[];
  items: LedgerEntry[];
  nextCursor: string | null;
  totals: LedgerTotals;
}

export interface LedgerOptions {
  /** entries per page, 1-500 (the service's default: 50) */
  limit?: number;
  /** start after this cursor (a page's nextCursor) instead of at the newest */
  cursor?: string;
}

// ---- artefacts verified offline (./verify.ts) -----------------------------------------------

/** One key of a JWKS, as GET /.well-known/jwks.json serves it (kty OKP, crv Ed25519, alg EdDSA, use sig). */
export interface PublicJwk {
  kty: string;
  crv?: string;
  /** the public key, base64url */
  x?: string;
  /** its RFC 7638 thumbprint: the kid of the JWS it signs */
  kid?: string;
  alg?: string;
  use?: string;
  /** other members (an RSA key's n and e...): keys other than Ed25519 are skipped */
  [member: string]: unknown;
}

/** A JSON Web Key Set: GET /.well-known/jwks.json's body. */
export interface JsonWebKeySet {
  keys: readonly PublicJwk[];
}

/**
 * A license token's claims (POST /api/License/validate with licenseKey and password): the
 * license as the service saw it at `iat`, signed with Ed25519. Times in seconds since the epoch.
 */
export interface LicenseTokenClaims {
  typ: 'license';
  iss: string;
  firma_id: string;
  firma_adi: string;
  active: true;
  /** the license's expiry */
  license_exp: number;
  total_quota: number;
  used_quota: number;
  remaining_quota: number;
  /** the authorised domains; empty: any */
  domains: string[];
  iat: number;
  /** the token's own expiry: iat + LICENSE_TOKEN_SECONDS, or license_exp when sooner */
  exp: number;
}

/** A document a receipt names: what the desktop application signed. */
export interface ReceiptDocument {
  name: string;
  /** lower-case hex SHA-256 of the document */
  sha256: string;
}

/**
 * A receipt's claims (POST /api/Signature/sign): one sign token redeemed for these
 * documents. A receipt does not expire; receiptDigest() is what Postgres keeps of it.
 */
export interface ReceiptClaims {
  typ: 'receipt';
  iss: string;
  /** the redeemed sign token's token_id */
  jti: string;
  firma_id: string;
  imza_tipi: ImzaTipi;
  documents: ReceiptDocument[];
  /** the redemption, seconds since the epoch */
  iat: number;
  /** the license's quota after this redemption */
  used_quota: number;
  remaining_quota: number;
}
