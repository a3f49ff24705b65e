import { domainToASCII } from 'node:url';

// The host names of a license's domains and of the origins checked against them
// (docs/api.md#origin-rules). Both obey one label rule, isHostName, so that nothing an origin
// names can match an entry unless it is a host name an entry could be: a literal "*", an
// empty label or a percent escape never reaches redeem.lua's search.

/** A label: a-z, 0-9 and "-", not at either end, 1 to 63 characters (RFC 1035, in ASCII form). */
const LABEL = '(?!-)[a-z0-9-]{1,63}(?<!-)';
/** Labels joined by single dots: no empty label, no dot at either end. */
const HOST_NAME = new RegExp(`^(?:${LABEL}\\.)*${LABEL}$`);
/** A name is 255 octets on the wire at most: 253 characters written out without the root's dot. */
export const MAX_HOST_LENGTH = 253;

/** Whether a lower-case ASCII host is a host name as domain entries and origins must name one. */
function isHostName(host: string): boolean {
  return host.length <= MAX_HOST_LENGTH && HOST_NAME.test(host);
}

/** http:// or https://, any case (sticky: test() reads it in place, lastIndex then past it). */
const WEB_SCHEME = /https?:\/\//iy;
/** A host that needs IDNA: an internationalised name, or a punycode label to decode (an invalid one names nothing). */
const NEEDS_IDNA = /[\u0080-\uffff]|xn--/i;
/**
 * What may stand beside the non-ASCII characters of a host given to IDNA: label characters
 * and dots only, since domainToASCII would decode "%41" into "a" and stop at a "\".
 */
const IDN_TEXT = /^[a-z0-9.\-\u0080-\uffff]*$/i;

const COLON = 0x3a;
const SLASH = 0x2f;
const QUESTION = 0x3f;
const HASH = 0x23;
const ZERO = 0x30;

/** A "/", "?" or "#": the path, query or fragment after the host, ignored. */
const startsRest = (c: number): boolean => c === SLASH || c === QUESTION || c === HASH;

/** Where a port of 1 to 5 digits (at most 65535) starting at `from` ends, or -1 when there is none. */
function portEnd(text: string, from: number): number {
  let value = 0;
  let i = from;
  for (; i < text.length && i - from < 6; i++) {
    const d = text.charCodeAt(i) - ZERO;
    if (d < 0 || d > 9) break;
    value = value * 10 + d;
  }
  return i === from || i - from > 5 || value > 65535 ? -1 : i;
}

/**
 * The host name of an origin as the client sent it, in lower case, internationalised names
 * in their ASCII (punycode) form, a trailing dot dropped; "" when it names none. Accepted:
 * `host`, `host:port` and `host/path…`, each optionally after `http://` or `https://` (any
 * case), the path also `?…` or `#…`. Anything else, another scheme included, is "": a
 * user (`user@host`), a port that is not 1-5 digits, a host that fails isHostName ("*",
 * "%", empty labels, an IPv6 literal, too long). Written out rather than with `new URL`,
 * whose leniency (percent decoding, user info, any scheme) let such origins match, and
 * because it runs on every redemption: no object but the host it returns.
 */
export function originHost(origin: string): string {
  const text = origin.trim();
  WEB_SCHEME.lastIndex = 0;
  const start = WEB_SCHEME.test(text) ? WEB_SCHEME.lastIndex : 0;
  let end = start;
  for (; end < text.length; end++) {
    const c = text.charCodeAt(end);
    if (c === COLON || startsRest(c)) break;
  }
  if (end < text.length && text.charCodeAt(end) === COLON) {
    // a port, then nothing or the rest: "mailto:x@a.com" and "https:a.com" stop here
    const after = portEnd(text, end + 1);
    if (after < 0 || (after < text.length && !startsRest(text.charCodeAt(after)))) return '';
  }
  let host = text.slice(start, end);
  if (NEEDS_IDNA.test(host)) host = IDN_TEXT.test(host) ? domainToASCII(host) : '';
  else host = host.toLowerCase();
  // "example.com." is example.com written from the root
  if (host.endsWith('.')) host = host.slice(0, -1);
  return isHostName(host) ? host : '';
}

/** An authorised-domain entry normalised ("example.com", "*.example.com"), or null if invalid. */
export function normaliseDomain(entry: string): string | null {
  const text = entry.trim();
  const wildcard = text.startsWith('*.');
  // read as an origin's host is, so that an entry and an origin naming one host agree
  const host = originHost(wildcard ? text.slice(2) : text);
  if (host === '') return null;
  return wildcard ? `*.${host}` : host;
}

/** The list encodeDomains wrote. */
export function decodeDomains(encoded: string): string[] {
  return encoded === '' ? [] : encoded.slice(1, -1).split(',');
}

/** The form redeem.lua searches: ",a.com,*.b.com," ("" when any origin is accepted). */
export function encodeDomains(domains: readonly string[]): string {
  return domains.length === 0 ? '' : `,${domains.join(',')},`;
}
