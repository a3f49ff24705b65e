// Content negotiation. Between a page and JSON (GET /): what a browser asks for gets the page,
// what an API client asks for (or nothing) gets JSON. Between codings (the documentation's
// files, src/http/static.ts): brotli, gzip or none, by Accept-Encoding. Each header is scanned
// without a substring, an array or a regular expression: any header, however long or
// malformed, costs time in proportion to its length and allocates nothing.

const COMMA = 0x2c;
const SEMICOLON = 0x3b;
const SLASH = 0x2f;
const EQUALS = 0x3d;
const DOT = 0x2e;
const SPACE = 0x20;
const TAB = 0x09;
const ZERO = 0x30;

const isSpace = (c: number): boolean => c === SPACE || c === TAB;

/** Whether s[start, end) is `word`, ASCII letters compared without case. */
function isWord(s: string, start: number, end: number, word: string): boolean {
  if (end - start !== word.length) return false;
  for (let i = 0; i < word.length; i++) {
    if ((s.charCodeAt(start + i) | 0x20) !== word.charCodeAt(i)) return false;
  }
  return true;
}

/** A qvalue ("0", "0.8", "1.000") in thousandths, or -1 when it is not one (the parameter is then ignored). */
function thousandths(s: string, start: number, end: number): number {
  while (end > start && isSpace(s.charCodeAt(end - 1))) end--;
  if (start >= end) return -1;
  const whole = s.charCodeAt(start) - ZERO;
  if (whole !== 0 && whole !== 1) return -1;
  let value = whole * 1000;
  if (start + 1 < end) {
    if (s.charCodeAt(start + 1) !== DOT || end - start - 2 > 3) return -1;
    let scale = 100;
    for (let i = start + 2; i < end; i++, scale /= 10) {
      const digit = s.charCodeAt(i) - ZERO;
      if (digit < 0 || digit > 9) return -1;
      value += digit * scale;
    }
  }
  return value > 1000 ? -1 : value;
}

/**
 * How closely the range type/sub matches the media type `type`/`sub`: 3 exactly, 2 by
 * "type/*", 1 by "*\/*", 0 not at all.
 */
function closeness(s: string, typeStart: number, typeEnd: number, subStart: number, subEnd: number, type: string, sub: string): number {
  const anySub = subEnd - subStart === 1 && s.charCodeAt(subStart) === 0x2a;
  if (typeEnd - typeStart === 1 && s.charCodeAt(typeStart) === 0x2a) return anySub ? 1 : 0;
  if (!isWord(s, typeStart, typeEnd, type)) return 0;
  if (anySub) return 2;
  return isWord(s, subStart, subEnd, sub) ? 3 : 0;
}

/**
 * Whether an Accept header gives text/html a higher quality than application/json (RFC
 * 9110, 12.5.1: a media type's quality is the q of the most specific range that matches it,
 * 1 when the range has none). A browser's "text/html,…,*\/*;q=0.8" does; "application/json",
 * "*\/*" and no header at all do not (a tie is JSON's).
 */
export function prefersHtml(accept: string): boolean {
  let htmlCloseness = 0;
  let htmlQ = 0;
  let jsonCloseness = 0;
  let jsonQ = 0;
  const n = accept.length;
  let i = 0;
  while (i < n) {
    // one range: type/subtype, then ";name=value" parameters, up to the next comma
    while (i < n && isSpace(accept.charCodeAt(i))) i++;
    const typeStart = i;
    while (i < n && !isRangeEnd(accept.charCodeAt(i)) && accept.charCodeAt(i) !== SLASH) i++;
    const typeEnd = i;
    let subStart = i;
    if (i < n && accept.charCodeAt(i) === SLASH) subStart = ++i;
    while (i < n && !isRangeEnd(accept.charCodeAt(i))) i++;
    const subEnd = i;
    const end = elementEnd(accept, i);
    const q = qOf(accept, i, end);
    i = end + 1; // past the comma
    const html = closeness(accept, typeStart, typeEnd, subStart, subEnd, 'text', 'html');
    if (html > htmlCloseness || (html > 0 && html === htmlCloseness && q > htmlQ)) {
      htmlCloseness = html;
      htmlQ = q;
    }
    const json = closeness(accept, typeStart, typeEnd, subStart, subEnd, 'application', 'json');
    if (json > jsonCloseness || (json > 0 && json === jsonCloseness && q > jsonQ)) {
      jsonCloseness = json;
      jsonQ = q;
    }
  }
  return htmlQ > jsonQ;
}

/** Where the list element that s[i] is in ends: its comma, or the end of s. */
function elementEnd(s: string, i: number): number {
  while (i < s.length && s.charCodeAt(i) !== COMMA) i++;
  return i;
}

/** The q of the parameters in s[i, end) (";level=1;q=0.5"), in thousandths: 1000 without a valid one. */
function qOf(s: string, i: number, end: number): number {
  let q = 1000;
  while (i < end) {
    if (s.charCodeAt(i) !== SEMICOLON) {
      i++;
      continue;
    }
    i++;
    while (i < end && isSpace(s.charCodeAt(i))) i++;
    const isQ = i + 1 < end && (s.charCodeAt(i) | 0x20) === 0x71 && s.charCodeAt(i + 1) === EQUALS;
    const valueStart = isQ ? i + 2 : i;
    while (i < end && s.charCodeAt(i) !== SEMICOLON) i++;
    if (isQ) {
      const value = thousandths(s, valueStart, i);
      if (value >= 0) q = value;
    }
  }
  return q;
}

/** The characters that end a range's type or subtype. */
function isRangeEnd(c: number): boolean {
  return c === COMMA || c === SEMICOLON || isSpace(c);
}

/** A content coding of an answer the service compresses (src/http/static.ts), or none. */
export type Coding = 'br' | 'gzip' | 'identity';

/**
 * The coding to send for an Accept-Encoding header (RFC 9110, 12.5.3): of br and gzip, the
 * one with the higher q above 0 (br on a tie: the smaller answer), a coding not named taking
 * the q of "*"; identity when the header names it with a higher q, or when it accepts neither.
 * An empty header, like an absent one, is identity: a client that names no coding may not
 * decode one. Scanned as prefersHtml's Accept, nothing allocated.
 */
export function preferredCoding(header: string): Coding {
  let br = -1;
  let gzip = -1;
  let identity = -1;
  let any = -1;
  const n = header.length;
  let i = 0;
  while (i < n) {
    while (i < n && (isSpace(header.charCodeAt(i)) || header.charCodeAt(i) === COMMA)) i++;
    const start = i;
    while (i < n && !isRangeEnd(header.charCodeAt(i))) i++;
    const end = i;
    i = elementEnd(header, i);
    const q = qOf(header, end, i);
    if (isWord(header, start, end, 'br')) br = q;
    else if (isWord(header, start, end, 'gzip') || isWord(header, start, end, 'x-gzip')) gzip = q;
    else if (isWord(header, start, end, 'identity')) identity = q;
    else if (end - start === 1 && header.charCodeAt(start) === 0x2a) any = q;
  }
  const qBr = br >= 0 ? br : Math.max(any, 0);
  const qGzip = gzip >= 0 ? gzip : Math.max(any, 0);
  if (qBr > 0 && qBr >= qGzip && qBr >= identity) return 'br';
  if (qGzip > 0 && qGzip >= identity) return 'gzip';
  return 'identity';
}
