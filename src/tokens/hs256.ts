import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import { uniqueObjectOf } from './jsonKeys.js';

// HS256 verification of a token whose key is already chosen (by its header: jwt.ts). The
// signature is checked before anything of the payload is read, and the payload is decoded
// and parsed once, its members checked for repeats on the same text: verifying with a
// library and then decoding the payload again for that check would cost twice
// (bench/README.md, JWT verification).

/** An HMAC-SHA256 in base64url: 43 characters, the last one carrying 4 bits and two zero bits. */
const SIGNATURE = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * The claims of `token` (header.payload.signature, the header ending at `headerEnd`) when
 * `key` signed it: the payload, a JSON object that repeats no member name anywhere. Null
 * otherwise: another number of parts, a signature of another length, alphabet, padding or
 * spare bits (header and payload are signed as written, so no one without the key can
 * respell a token), a payload that is not base64url of such an object. The time claims are
 * the caller's.
 */
export function verifiedClaims(token: string, headerEnd: number, key: KeyObject): Record<string, unknown> | null {
  const payloadEnd = token.indexOf('.', headerEnd + 1);
  if (payloadEnd < 0) return null;
  const signature = token.slice(payloadEnd + 1);
  if (!SIGNATURE.test(signature)) return null;
  const mac = createHmac('sha256', key).update(token.slice(0, payloadEnd)).digest();
  if (!timingSafeEqual(mac, Buffer.from(signature, 'base64url'))) return null;

  const segment = token.slice(headerEnd + 1, payloadEnd);
  if (!BASE64URL.test(segment)) return null;
  return uniqueObjectOf(Buffer.from(segment, 'base64url').toString('utf8'));
}
