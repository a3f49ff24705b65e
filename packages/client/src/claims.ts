import { ArtefactVerificationError } from './errors.js';
import type { ImzaTipi, LicenseTokenClaims, ReceiptClaims, ReceiptDocument } from './types.js';

// The payloads of the two artefacts, read after their signature verified. Each member is
// checked against the format's type and copied, so a caller gets exactly the typed claims;
// members the format does not name are left out, not refused (a later service may add some).

type Payload = Record<string, unknown>;

const SHA256_HEX = /^[0-9a-f]{64}$/;

function invalid(member: string, expected: string): ArtefactVerificationError {
  return new ArtefactVerificationError('INVALID_CLAIMS', `${member}: ${expected} expected`);
}

function own(payload: Payload, member: string): unknown {
  return Object.prototype.hasOwnProperty.call(payload, member) ? payload[member] : undefined;
}

function stringOf(payload: Payload, member: string): string {
  const value = own(payload, member);
  if (typeof value !== 'string') throw invalid(member, 'a string');
  return value;
}

/** Counts and times: safe integers, not negative. */
function countOf(payload: Payload, member: string): number {
  const value = own(payload, member);
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalid(member, 'a non-negative integer');
  return value;
}

function arrayOf(payload: Payload, member: string): unknown[] {
  const value = own(payload, member);
  if (!Array.isArray(value)) throw invalid(member, 'an array');
  return value;
}

function documentOf(value: unknown, i: number): ReceiptDocument {
  const where = `documents[${i}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(where, 'an object');
  const name = stringOf(value as Payload, 'name');
  const sha256 = own(value as Payload, 'sha256');
  if (typeof sha256 !== 'string' || !SHA256_HEX.test(sha256)) throw invalid(`${where}.sha256`, '64 lower-case hex digits');
  return { name, sha256 };
}

/** typ first: a receipt is never read as a license token, nor the reverse, whatever else it holds. */
export function checkKind(payload: Payload, typ: 'license' | 'receipt'): void {
  const actual = own(payload, 'typ');
  if (actual !== typ) {
    const said = typeof actual === 'string' ? `"${actual.slice(0, 64)}"` : 'no typ';
    throw new ArtefactVerificationError('WRONG_ARTEFACT', `not a ${typ === 'license' ? 'license token' : 'receipt'} (${said})`);
  }
}

export function checkIssuer(payload: Payload, issuer: string): string {
  const iss = own(payload, 'iss');
  if (iss !== issuer) throw new ArtefactVerificationError('WRONG_ISSUER', `issued by ${typeof iss === 'string' ? `"${iss.slice(0, 256)}"` : 'no iss'}, not "${issuer}"`);
  return iss;
}

/** A license token's claims; INACTIVE and EXPIRED once every member is known to be of its type. */
export function licenseClaims(payload: Payload, iss: string, nowSeconds: number, toleranceSeconds: number): LicenseTokenClaims {
  const active = own(payload, 'active');
  if (typeof active !== 'boolean') throw invalid('active', 'a boolean');
  const domains = arrayOf(payload, 'domains');
  if (!domains.every((d) => typeof d === 'string')) throw invalid('domains', 'an array of strings');
  const claims: LicenseTokenClaims = {
    typ: 'license',
    iss,
    firma_id: stringOf(payload, 'firma_id'),
    firma_adi: stringOf(payload, 'firma_adi'),
    active: true,
    license_exp: countOf(payload, 'license_exp'),
    total_quota: countOf(payload, 'total_quota'),
    used_quota: countOf(payload, 'used_quota'),
    remaining_quota: countOf(payload, 'remaining_quota'),
    domains: domains as string[],
    iat: countOf(payload, 'iat'),
    exp: countOf(payload, 'exp'),
  };
  if (!active) throw new ArtefactVerificationError('INACTIVE', 'the license was not active when the token was issued');
  if (nowSeconds > claims.exp + toleranceSeconds) {
    throw new ArtefactVerificationError('EXPIRED', `expired at ${new Date(claims.exp * 1000).toISOString()}`);
  }
  return claims;
}

export function receiptClaims(payload: Payload, iss: string): ReceiptClaims {
  const imzaTipi = own(payload, 'imza_tipi');
  if (imzaTipi !== 0 && imzaTipi !== 1) throw invalid('imza_tipi', '0 or 1');
  const jti = stringOf(payload, 'jti');
  const firmaId = stringOf(payload, 'firma_id');
  return {
    typ: 'receipt',
    iss,
    jti,
    firma_id: firmaId,
    imza_tipi: imzaTipi as ImzaTipi,
    documents: arrayOf(payload, 'documents').map(documentOf),
    iat: countOf(payload, 'iat'),
    used_quota: countOf(payload, 'used_quota'),
    remaining_quota: countOf(payload, 'remaining_quota'),
  };
}
