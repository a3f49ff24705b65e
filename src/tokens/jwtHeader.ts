import { uniqueObjectOf } from './jsonKeys.js';

// The headers a token may carry. Those this service writes name the kid of their key,
// {"alg":"HS256","typ":"JWT","kid":"<kid>"}, and are matched byte for byte. The
// published header is {"alg":"HS256","typ":"JWT"}, without a kid: a token
// made to it by any JWT library is verified with the key that signs now. Libraries differ
// in what they write for it (jsonwebtoken, golang-jwt, PyJWT 2: alg then typ;
// firebase/php-jwt and PyJWT 1: typ then alg; jjwt, ruby-jwt and jose without a typ: alg
// alone; a header written by hand with Python's json.dumps: spaces after ':' and ','), so
// a kid-less header is read as JSON, once, and accepted when its members are exactly alg
// "HS256" and, optionally, typ "JWT". Anything else names something this service would
// have to act on and does not: another algorithm (none, HS512, RS256 with the HMAC key as
// a public key), a key to fetch or trust (jku, jwk, x5u, x5c), an extension it must
// understand (crit, b64), a nested token (cty), a kid written otherwise than this service
// writes it. A header that repeats a member ({"alg":"none","alg":"HS256"}) is refused:
// parsers disagree on which one counts.

/** Longest kid-less header segment read: the published one is 36 characters; room for whitespace, no more. */
const MAX_KIDLESS_SEGMENT = 128;

/** The first part of every token signed with a key: its header, {"alg":"HS256","typ":"JWT","kid":...}. */
export function headerSegment(kid: string): string {
  return segmentOf(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid }));
}

/** base64url of a JSON text, as a header or payload segment. */
export function segmentOf(json: string): string {
  return Buffer.from(json).toString('base64url');
}

/**
 * The kid-less headers as JWT libraries write them, compactly: looked up as a table, as the
 * service's own headers are, so only other spellings are parsed.
 */
export const COMPACT_KIDLESS_HEADERS: readonly string[] = [
  '{"alg":"HS256","typ":"JWT"}', // the published header
  '{"typ":"JWT","alg":"HS256"}',
  '{"alg":"HS256"}',
];

/**
 * Whether a header segment is a kid-less header this service accepts: base64url of a JSON
 * object (written as base64url writes it: one segment per text) whose members are exactly
 * alg "HS256" and, optionally, typ "JWT", none repeated. Bounded: at most 128 characters are
 * decoded and parsed, before any HMAC is computed.
 */
export function isKidlessHeader(segment: string): boolean {
  if (segment.length > MAX_KIDLESS_SEGMENT) return false;
  const bytes = Buffer.from(segment, 'base64url');
  // Buffer skips what is not base64url, reads the standard alphabet and padding too, and
  // ignores the last character's spare bits: written back, any of these differs
  if (bytes.toString('base64url') !== segment) return false;
  const header = uniqueObjectOf(bytes.toString('utf8'));
  if (header === null) return false;
  let alg = false;
  for (const [name, value] of Object.entries(header)) {
    if (name === 'alg' && value === 'HS256') alg = true;
    else if (!(name === 'typ' && value === 'JWT')) return false;
  }
  return alg;
}
