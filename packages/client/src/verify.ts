import { checkIssuer, checkKind, licenseClaims, receiptClaims } from './claims.js';
import { fromBase64url, objectOfSegment, SEGMENT, sha256Hex } from './encoding.js';
import { ArtefactVerificationError, LicenseSdkError } from './errors.js';
import { importJwks, type KeySet } from './keyset.js';
import type { JsonWebKeySet, LicenseTokenClaims, ReceiptClaims } from './types.js';

// Offline verification of the service's artefacts: license tokens (POST /api/License/validate)
// and receipts (POST /api/Signature/sign), compact JWS signed with Ed25519 whose keys the
// service publishes at /.well-known/jwks.json. Nothing is sent to the service but that
// fetch, and with a JWKS given, nothing at all. Every refusal is an ArtefactVerificationError,
// whatever the input: a verifier is handed hostile strings.

/** Where the keys come from: a JWKS given, or a KeySet that fetches the service's and keeps it. */
export type KeySource = { jwks: JsonWebKeySet; keySet?: undefined } | { keySet: KeySet; jwks?: undefined };

export type VerifyOptions = KeySource & {
  /** the expected iss, the service's JWT_ISSUER (default "license-service") */
  issuer?: string;
  /** the time the license token's exp is compared with (default: the clock) */
  now?: Date;
  /** how far past exp a license token is still accepted, for clocks that disagree (default 60 s) */
  clockToleranceSeconds?: number;
};

/** Longest artefact read: a receipt of a thousand documents is about 150 000 characters. */
const MAX_ARTEFACT_LENGTH = 4 * 1024 * 1024;

/** The header members a verifier understands; any other (jku, jwk, x5u, x5c, crit, b64, cty...) asks for what it does not do. */
const HEADER_MEMBERS = new Set(['alg', 'typ', 'kid']);

/** Key sets of the JWKS given, imported once per JWKS object. */
const given = new WeakMap<object, Promise<Map<string, CryptoKey>>>();

function malformed(message: string): ArtefactVerificationError {
  return new ArtefactVerificationError('MALFORMED', message);
}

/** The three segments of a compact JWS. */
function segmentsOf(artefact: unknown): [string, string, string] {
  if (typeof artefact !== 'string') throw malformed(`a string expected, got ${artefact === null ? 'null' : typeof artefact}`);
  if (artefact.length > MAX_ARTEFACT_LENGTH) throw malformed(`longer than ${MAX_ARTEFACT_LENGTH} characters`);
  const parts = artefact.split('.');
  if (parts.length !== 3) throw malformed(`${parts.length} segments, a compact JWS has 3`);
  if (!parts.every((p) => SEGMENT.test(p))) throw malformed('a segment empty or not base64url without padding');
  return parts as [string, string, string];
}

/** The kid of a header that is exactly {alg: "EdDSA", typ?: "JWT", kid}. */
function kidOf(segment: string): string {
  const header = objectOfSegment(segment);
  if (header === null) throw malformed('the header is not the base64url of a JSON object');
  const extra = Object.keys(header).find((name) => !HEADER_MEMBERS.has(name));
  if (extra !== undefined) throw new ArtefactVerificationError('UNSUPPORTED_HEADER', `header member ${JSON.stringify(extra.slice(0, 64))} is not supported`);
  if (header.alg !== 'EdDSA') throw new ArtefactVerificationError('UNSUPPORTED_HEADER', `alg ${String(JSON.stringify(header.alg) ?? 'missing').slice(0, 64)}: only EdDSA is accepted`);
  if (header.typ !== undefined && header.typ !== 'JWT') throw new ArtefactVerificationError('UNSUPPORTED_HEADER', 'typ other than JWT');
  if (typeof header.kid !== 'string' || header.kid === '') throw new ArtefactVerificationError('UNSUPPORTED_HEADER', 'no kid');
  return header.kid;
}

async function keyOf(options: VerifyOptions, kid: string): Promise<CryptoKey> {
  // by shape, not instanceof: a bundle may hold two copies of this module
  if (typeof options.keySet?.key === 'function') return options.keySet.key(kid);
  const jwks = options.jwks;
  if (typeof jwks !== 'object' || jwks === null) throw new LicenseSdkError('verify: options.jwks or options.keySet is required');
  let keys = given.get(jwks);
  if (keys === undefined) {
    keys = importJwks(jwks);
    given.set(jwks, keys);
  }
  const key = (await keys).get(kid);
  if (!key) throw new ArtefactVerificationError('UNKNOWN_KEY', `no key ${kid.slice(0, 64)} in the JWKS given`);
  return key;
}

/** The payload of an artefact whose header and signature verify. */
async function verifiedPayload(artefact: unknown, options: VerifyOptions): Promise<Record<string, unknown>> {
  const [header, payload, signature] = segmentsOf(artefact);
  const kid = kidOf(header);
  const key = await keyOf(options, kid);
  const bytes = fromBase64url(signature);
  // an Ed25519 signature is 64 bytes; WebCrypto answers false for another length, or throws in some runtimes
  if (bytes === null || bytes.length !== 64) throw new ArtefactVerificationError('BAD_SIGNATURE', 'the signature is not 64 bytes of base64url');
  let valid: boolean;
  try {
    valid = await globalThis.crypto.subtle.verify('Ed25519', key, bytes, new TextEncoder().encode(`${header}.${payload}`));
  } catch {
    valid = false;
  }
  if (!valid) throw new ArtefactVerificationError('BAD_SIGNATURE', `the signature does not verify with key ${kid.slice(0, 64)}`);
  const claims = objectOfSegment(payload);
  if (claims === null) throw malformed('the payload is not the base64url of a JSON object without repeated members');
  return claims;
}

// A NaN clock or tolerance would make every exp comparison false: an expired token would
// pass. The caller's mistake is thrown, never turned into a verification.
function nowOf(options: VerifyOptions): number {
  const ms = (options.now ?? new Date()).getTime();
  if (!Number.isFinite(ms)) throw new LicenseSdkError('verify: options.now is an invalid Date');
  return Math.floor(ms / 1000);
}

function toleranceOf(options: VerifyOptions): number {
  const seconds = options.clockToleranceSeconds ?? 60;
  if (typeof seconds !== 'number' || !(seconds >= 0)) throw new LicenseSdkError('verify: options.clockToleranceSeconds must be a number, 0 or more');
  return seconds;
}

function issuerOf(options: VerifyOptions): string {
  return options.issuer ?? 'license-service';
}

/**
 * A license token's claims, when it verifies offline: an Ed25519 signature by a key of the
 * set, typ "license", the expected iss, active, exp not past (with clockToleranceSeconds).
 * Else an ArtefactVerificationError (reason: why).
 */
export async function verifyLicenseToken(token: string, options: VerifyOptions): Promise<LicenseTokenClaims> {
  const payload = await verifiedPayload(token, options);
  checkKind(payload, 'license');
  const iss = checkIssuer(payload, issuerOf(options));
  return licenseClaims(payload, iss, nowOf(options), toleranceOf(options));
}

/**
 * A receipt's claims, when it verifies offline: an Ed25519 signature by a key of the set,
 * typ "receipt", the expected iss. Receipts do not expire. Else an ArtefactVerificationError.
 */
export async function verifyReceipt(receipt: string, options: VerifyOptions): Promise<ReceiptClaims> {
  const payload = await verifiedPayload(receipt, options);
  checkKind(payload, 'receipt');
  return receiptClaims(payload, checkIssuer(payload, issuerOf(options)));
}

/**
 * The lower-case hex SHA-256 of a receipt's payload bytes (its middle segment, decoded): what
 * the service keeps in Postgres, the same whichever key signed it. It verifies nothing: call
 * verifyReceipt first. MALFORMED when the receipt is not a compact JWS.
 */
export async function receiptDigest(receipt: string): Promise<string> {
  const bytes = fromBase64url(segmentsOf(receipt)[1]);
  if (bytes === null) throw malformed('the payload is not base64url without padding');
  return sha256Hex(bytes);
}
