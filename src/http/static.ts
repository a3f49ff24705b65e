import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { preferredCoding, type Coding } from './accept.js';
import { STATUS, type Headers, type Reply } from './reply.js';

// Files served from memory (the documentation's document, pages and their files), each in
// gzip and brotli besides as it is: a request gets the one its Accept-Encoding prefers
// (src/http/accept.ts), and 304 without a body when its If-None-Match names the ETag of the
// one it would get. Every answer carries Vary: Accept-Encoding, so that a cache keeps the
// codings apart. Each coding has an ETag of its own (its bytes differ); a coding that would
// not be smaller is not offered.
//
// A coding is compressed when it is first asked for, on libuv's threads (the event loop goes
// on serving meanwhile; requests asking for it then wait for that one compression), and kept:
// compressing every file at start cost each process about a sixth of its start's CPU, for
// pages most processes never serve. Brotli at quality 5: Swagger UI's 1.7 MB script takes
// about 80 ms and comes out 12 % smaller than gzip's 460 KB; quality 9 takes 390 ms for 3 %
// more, quality 11 seven seconds for 11 % more (bench/README.md, The documentation pages).

const BROTLI_QUALITY = 5;
const VARY: readonly [string, string] = ['Vary', 'Accept-Encoding'];
const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

export interface StaticFile {
  /** the answer to a request with these Accept-Encoding and If-None-Match headers ("" when absent) */
  answer(acceptEncoding: string, ifNoneMatch: string): Reply | Promise<Reply>;
}

interface Version {
  etag: string;
  ok: Reply;
  notModified: Reply;
}

/**
 * A file's answers: 200 with `contentType`, Cache-Control, ETag, Vary, Content-Encoding when
 * compressed and `headers` (a page's Content-Security-Policy); 304 with Cache-Control, ETag
 * and Vary, what a cache updates its copy from (RFC 9110, 15.4.5).
 */
export function staticFile(body: string | Uint8Array, contentType: string, cacheControl: string, headers: Headers = []): StaticFile {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const tag = createHash('sha256').update(bytes).digest('base64url').slice(0, 27);
  const version = (coding: Coding, encoded: Uint8Array): Version => {
    const etag = coding === 'identity' ? `"${tag}"` : `"${tag}-${coding}"`;
    const common: Headers = [['Cache-Control', cacheControl], ['ETag', etag], VARY];
    const encoding: Headers = coding === 'identity' ? [] : [['Content-Encoding', coding]];
    return {
      etag,
      ok: { status: STATUS[200] as string, body: encoded, contentType, headers: [...common, ...encoding, ...headers] },
      notModified: { status: STATUS[304] as string, body: '', noBody: true, headers: common },
    };
  };
  const identity = version('identity', bytes);
  const smaller = (coding: Coding, encoded: Uint8Array): Version => (encoded.byteLength < bytes.byteLength ? version(coding, encoded) : identity);
  // each coding once, when first asked for; a compression that fails leaves the file as it is
  const lazily = (coding: Coding, compress: () => Promise<Uint8Array>) => {
    let done: Version | null = null;
    let pending: Promise<Version> | null = null;
    return (): Version | Promise<Version> => done ?? (pending ??= compress().then(
      (encoded) => (done = smaller(coding, encoded)),
      () => (done = identity),
    ));
  };
  const gzipped = lazily('gzip', () => gzipAsync(bytes, { level: 9 }));
  const brotli = lazily('br', () => brotliAsync(bytes, {
    params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength },
  }));
  const reply = (v: Version, ifNoneMatch: string): Reply => (ifNoneMatch !== '' && matches(ifNoneMatch, v.etag) ? v.notModified : v.ok);
  return {
    answer(acceptEncoding, ifNoneMatch) {
      const coding = preferredCoding(acceptEncoding);
      const v = coding === 'br' ? brotli() : coding === 'gzip' ? gzipped() : identity;
      return v instanceof Promise ? v.then((ready) => reply(ready, ifNoneMatch)) : reply(v, ifNoneMatch);
    },
  };
}

/**
 * If-None-Match against an ETag, by weak comparison (RFC 9110, 13.1.2): "*", or the tag
 * among those listed, with W/ or without. Listed tags are quoted, so the quoted tag occurs
 * in the header exactly when it is listed: one search, nothing split.
 */
function matches(header: string, etag: string): boolean {
  return header.includes(etag) || header.trim() === '*';
}
