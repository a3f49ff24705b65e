import { type Got, parseJson, type Sent } from './fuzzHttp.js';

// Fuzzing (test/system/fuzz.test.ts), part 4: the published error shapes and the checks of every answer.

// ---- published shapes -----------------------------------------------------------------------

/**
 * coded: {success:false, error:{code, message}} (admin, unknown paths);
 * issue: coded, or the published 429 {success:false, message, retryAfter} (get-token, sign-token, history, ledger);
 * message: {success:false, message} (validate; 429 adds retryAfter, quota exhausted remainingQuota 0);
 * timestamped: {success:false, error:{code, message}, timestamp} plus optional data, retryAfter (check-quota).
 */
export type Shape = 'coded' | 'issue' | 'message' | 'timestamped';

/** The error shape(s) of whatever answers at this path (the router matches case-insensitively). */
export function shapesFor(path: string, body: Buffer | null = null, status = 400): Shape[] {
  const p = (path.split('?')[0] ?? '').toLowerCase();
  // validate's path with a key and no token is license validation: get-token's coded answers,
  // but for what the HTTP layer answers before the body is read (413: the path's, validate's shape)
  if (p === '/api/license/validate' && status !== 413 && asksForLicenseToken(body)) return ['issue'];
  if (p === '/api/v1/auth/get-token' || p === '/api/v1/auth/sign-token') return ['issue'];
  if (/^\/api\/license\/(?:history|ledger)\/[^/]+\/?$/.test(p)) return ['issue'];
  if (p === '/api/license/validate' || p === '/api/signature/sign') return ['message'];
  if (/^\/api\/license\/check-quota\/[^/]+\/?$/.test(p)) return ['timestamped'];
  // near misses that a normalising router may send to the endpoint: its shape or the 404 shape
  const norm = p.replace(/\/{2,}/g, '/').replace(/\/+$/, '');
  if (norm === '/api/license/validate' || norm === '/api/signature/sign') return ['message', 'coded'];
  if (norm === '/api/v1/auth/get-token' || norm === '/api/v1/auth/sign-token' || /^\/api\/license\/(?:history|ledger)(\/|$)/.test(norm)) return ['issue'];
  if (/^\/api\/license\/check-quota(\/|$)/.test(norm)) return ['timestamped', 'coded'];
  return ['coded'];
}

/** A body that is a JSON object with a licenseKey and no token. */
function asksForLicenseToken(body: Buffer | null): boolean {
  try {
    const value: unknown = JSON.parse(body?.toString('utf8') ?? '');
    return isObj(value) && !('token' in value) && 'licenseKey' in value;
  } catch {
    return false;
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const keysOf = (v: Obj): string => Object.keys(v).sort().join(',');
const nonEmpty = (v: unknown): boolean => typeof v === 'string' && v.length > 0;
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

function codedError(body: Obj, extraKeys: string[]): string | null {
  const allowed = new Set(['success', 'error', ...extraKeys]);
  const stray = Object.keys(body).filter((k) => !allowed.has(k));
  if (stray.length > 0) return `unexpected keys ${stray.join(',')}`;
  if (body.success !== false) return 'success is not false';
  if (!isObj(body.error)) return 'error is not an object';
  if (keysOf(body.error) !== 'code,message') return `error has keys {${keysOf(body.error)}}, not exactly {code, message}`;
  if (typeof body.error.code !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(body.error.code)) return `error.code ${JSON.stringify(body.error.code)}`;
  if (!nonEmpty(body.error.message)) return 'error.message is not a non-empty string';
  return null;
}

function rateBody(body: Obj): string | null {
  if (keysOf(body) !== 'message,retryAfter,success') return `429 keys {${keysOf(body)}}`;
  if (body.success !== false || !nonEmpty(body.message)) return '429 success/message';
  return null;
}

/** Why a 4xx body is not in the given shape, or null when it is. */
function shapeError(shape: Shape, status: number, body: unknown): string | null {
  if (!isObj(body)) return 'body is not a JSON object';
  switch (shape) {
    case 'coded':
      return codedError(body, []);
    case 'issue':
      if (status === 429 && 'retryAfter' in body) return rateBody(body);
      return codedError(body, []);
    case 'message': {
      const allowed = new Set(['success', 'message']);
      if (status === 429) allowed.add('retryAfter');
      if (status === 400 && body.remainingQuota === 0) allowed.add('remainingQuota'); // quota exhausted (published)
      const stray = Object.keys(body).filter((k) => !allowed.has(k));
      if (stray.length > 0) return `unexpected keys ${stray.join(',')}`;
      if (body.success !== false) return 'success is not false';
      if (!nonEmpty(body.message)) return 'message is not a non-empty string';
      return null;
    }
    case 'timestamped': {
      const extra = ['timestamp', 'data'];
      if (status === 429) extra.push('retryAfter');
      const err = codedError(body, extra);
      if (err) return err;
      if (typeof body.timestamp !== 'string' || !ISO_UTC.test(body.timestamp)) return `timestamp ${JSON.stringify(body.timestamp)}`;
      if ('data' in body && !isObj(body.data)) return 'data is not an object';
      return null;
    }
  }
}

const STACK_PATTERNS: RegExp[] = [
  /\n\s+at /,
  /\bat [^\n]*\([^)\n]*:\d+:\d+\)/,
  /\w*Error:[^\n]*?(?:\/[\w.@-]+){2,}/,
  /node_modules/,
  /file:\/\//,
  /\/(?:dist|src)\/[\w./-]+\.(?:js|ts)\b/,
  /\.(?:js|ts|mjs|cjs):\d+:\d+/,
];

function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (isObj(v)) for (const [k, x] of Object.entries(v)) {
    out.push(k);
    strings(x, out);
  }
  return out;
}

/** Everything of a request that the service may echo back (so an echo is not a stack trace). */
function requestText(sent: Sent): string {
  const body = sent.body?.toString('utf8') ?? '';
  const parsed = parseJson(body);
  let path = sent.path;
  try {
    path += `\n${decodeURIComponent(sent.path)}`;
  } catch {
    // not decodable: the raw path is enough
  }
  return [path, ...Object.values(sent.headers), body, ...strings(parsed)].join('\n');
}

/** The body fields each endpoint reads (none may hold NUL or another C0 control character: docs/security.md#limits-and-what-each-bounds). */
const READ_FIELDS: [RegExp, string, string[]][] = [
  [/^\/api\/v1\/auth\/get-token$/, 'POST', ['licenseKey', 'password']],
  [/^\/api\/license\/validate$/, 'POST', ['token', 'origin']],
  [/^\/admin\/v1\/licenses$/, 'POST', ['organizationName', 'password', 'expiryDate', 'licenseKey', 'domains']],
  [/^\/admin\/v1\/licenses\/[^/]+$/, 'PATCH', ['organizationName', 'password', 'expiryDate', 'domains']],
];
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const C0 = /[\u0000-\u001f]/;

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * Where a request puts a C0 control character into something the endpoint reads: a body field,
 * a path segment or a paged list's limit, cursor and status (percent-decoded). Such a request must not succeed.
 */
export function controlCharacterIn(sent: Sent): string | null {
  const [rawPath = '', query = ''] = sent.path.split('?', 2) as [string?, string?];
  const path = rawPath.toLowerCase();
  for (const segment of rawPath.split('/')) if (C0.test(decoded(segment))) return `path segment ${JSON.stringify(segment)}`;
  // the paged lists: history, the ledger, the admin lists of licenses and of a license's tokens, the audit log
  if (/^\/api\/license\/(?:history|ledger)\/|^\/admin\/v1\/licenses(\/[^/]+\/tokens)?\/?$|^\/admin\/v1\/audit\/?$/.test(path)) {
    for (const pair of query.split('&')) {
      const [name = '', value = ''] = pair.split('=', 2) as [string?, string?];
      const read = ['limit', 'cursor', 'status', 'licenseKey', 'since'];
      if (read.includes(decoded(name)) && C0.test(decoded(value))) return `query parameter ${JSON.stringify(pair)}`;
    }
  }
  const rule = READ_FIELDS.find(([pattern, method]) => pattern.test(path) && method === sent.method);
  if (!rule || sent.body === null) return null;
  const body = parseJson(sent.body.toString('utf8'));
  if (!isObj(body)) return null;
  for (const name of rule[2]) {
    if (!Object.prototype.hasOwnProperty.call(body, name)) continue;
    const value = body[name];
    const texts = typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
    if (texts.some((x) => C0.test(x))) return `body field ${name}`;
  }
  return null;
}

export interface CheckOptions {
  /** HEAD answers carry no body */
  head?: boolean;
}

/** Every way an answer breaks the contract; empty when it is fine. */
export function violations(sent: Sent, got: Got, opts: CheckOptions = {}): string[] {
  const out: string[] = [];
  const { status } = got;
  if (sent.method === 'OPTIONS' && status === 204) {
    // a public path's OPTIONS: a plain one gets Allow, an allowed origin's preflight the CORS headers; no body either way
    if (got.text !== '') out.push('a 204 with a body');
    if (!got.headers.allow && !got.headers['access-control-allow-origin']) out.push('a 204 to OPTIONS with neither Allow nor Access-Control-Allow-Origin');
    return out;
  }
  if (status >= 500) out.push(`status ${status} (>= 500)`);
  else if (status !== 200 && status !== 201 && (status < 400 || status >= 500)) out.push(`status ${status} (neither 200/201 nor 4xx)`);
  const type = String(got.headers['content-type'] ?? '');
  if (!/^application\/json/i.test(type)) out.push(`content-type ${JSON.stringify(type)} is not JSON`);

  const echo = requestText(sent);
  for (const text of [got.text, ...strings(got.body)]) {
    for (const pattern of STACK_PATTERNS) {
      const m = pattern.exec(text);
      if (m && !echo.includes(m[0])) out.push(`stack trace or internal path in the answer: ${JSON.stringify(m[0])}`);
    }
  }
  if (opts.head) return [...new Set(out)];

  if (status === 200 || status === 201) {
    if (!isObj(got.body) || got.body.success !== true) out.push('a 2xx body without success:true');
    const control = controlCharacterIn(sent);
    if (control !== null) out.push(`accepted a C0 control character in the ${control} (published: 400)`);
  } else if (status >= 400 && status < 500) {
    const shapes = shapesFor(sent.path, sent.body, status);
    const errors = shapes.map((s) => shapeError(s, status, got.body));
    if (!errors.includes(null)) out.push(`not in the published ${shapes.join(' or ')} shape: ${errors.join('; ')}`);
    if (status === 429) {
      const header = String(got.headers['retry-after'] ?? '');
      if (!/^[1-9]\d*$/.test(header)) out.push(`429 without a Retry-After of whole seconds (${JSON.stringify(header)})`);
      if (isObj(got.body) && 'retryAfter' in got.body && String(got.body.retryAfter) !== header) {
        out.push(`retryAfter ${JSON.stringify(got.body.retryAfter)} differs from Retry-After ${JSON.stringify(header)}`);
      }
    }
    if (status === 405 && !got.headers.allow) out.push('405 without an Allow header');
  }
  return [...new Set(out)];
}

/** Text safe for a TAP line: control characters, C1 and line separators escaped. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- escaping control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** One failed answer, in words a reader can act on. */
export function describe(label: string, sent: Sent, got: Got | null, problems: string[]): string {
  const body = sent.body === null ? '(none)' : `${sent.body.length} bytes ${JSON.stringify(sent.body.toString('utf8').slice(0, 400))}`;
  return printable([
    `${label}: ${sent.method} ${JSON.stringify(sent.path.length > 300 ? `${sent.path.slice(0, 300)}…` : sent.path)}` +
      (got ? ` -> ${got.status}` : ''),
    `  problems: ${problems.join(' | ')}`,
    `  request headers: ${JSON.stringify(sent.headers).slice(0, 400)}`,
    `  request body: ${body}`,
    got ? `  answer: ${JSON.stringify(got.text.slice(0, 500))}` : '  answer: none',
  ].join('\n')).replace(/\\u000a/g, '\n');
}
