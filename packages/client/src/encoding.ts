import { uniqueObjectOf } from './members.js';

// The byte-level reading of a compact JWS, with WebCrypto and the encoding API only (no
// Buffer: the SDK runs in browsers). Strict where lenient decoders are not: one text per
// segment, so a signed token cannot be re-spelled into another string that also verifies.

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const SEXTETS = new Map([...ALPHABET].map((c, i) => [c.charCodeAt(0), i]));

/** A segment of a compact JWS: base64url without padding, at least one character. */
export const SEGMENT = /^[A-Za-z0-9_-]+$/;

/**
 * The bytes of a base64url text without padding, or null when it is not exactly that: a
 * character outside the alphabet, a length no encoding has (4n + 1), or spare bits of the
 * last character set (another spelling of the same bytes).
 */
export function fromBase64url(text: string): Uint8Array<ArrayBuffer> | null {
  const rest = text.length % 4;
  if (rest === 1) return null;
  const bytes = new Uint8Array(Math.floor(text.length / 4) * 3 + (rest === 0 ? 0 : rest - 1));
  let bits = 0;
  let value = 0;
  let at = 0;
  for (let i = 0; i < text.length; i++) {
    const sextet = SEXTETS.get(text.charCodeAt(i));
    if (sextet === undefined) return null;
    value = (value << 6) | sextet;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes[at++] = (value >> bits) & 0xff;
      value &= (1 << bits) - 1;
    }
  }
  return value === 0 ? bytes : null;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The UTF-8 text of bytes, or null when they are not UTF-8 (a BOM is kept, and then refused as JSON). */
function utf8(bytes: Uint8Array): string | null {
  try {
    return UTF8.decode(bytes);
  } catch {
    return null;
  }
}

/** The JSON object a segment encodes, or null: not base64url, not UTF-8, not JSON, not an object, a member repeated. */
export function objectOfSegment(segment: string): Record<string, unknown> | null {
  const bytes = fromBase64url(segment);
  const text = bytes === null ? null : utf8(bytes);
  return text === null ? null : uniqueObjectOf(text);
}

/** Lower-case hex of the SHA-256 of bytes. */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', bytes));
  let hex = '';
  for (const byte of digest) hex += byte.toString(16).padStart(2, '0');
  return hex;
}
