import type { Test } from 'tap';
import type { Answer } from './http.js';
import { decodeJwt, HS256_HEADER, ISSUER, signatureValid } from './jwt.js';

// The published answer shapes, asserted the same way by every suite:
// get-token, sign-token, history and admin errors are {success:false, error:{code, message}};
// validate answers {success:false, message}; check-quota adds a timestamp; a 429 of the rate
// limits is {success:false, message, retryAfter} with Retry-After.

/** The assertions these helpers make: any tap test object. */
export type Asserts = Pick<Test, 'equal' | 'not' | 'same' | 'strictSame' | 'ok' | 'notOk' | 'type' | 'match' | 'notMatch'>;

/** validate's messages. */
export const MSG = {
  EMPTY: 'Token boş olamaz',
  EXPIRED: 'Token süresi dolmuş',
  INVALID: 'Geçersiz token',
  USED: 'Bu token zaten kullanılmış. Yeni token alınız.',
  ORIGIN: 'Bu domain için yetki yok',
  QUOTA: 'İmza kotası doldu',
} as const;

/** The message of every rate-limit 429 but check-quota's. */
export const RATE_MESSAGE = 'Çok fazla istek. Lütfen bekleyiniz.';

/** Raw bodies that are not a JSON object. */
export const NOT_AN_OBJECT: [string, string][] = [
  ['empty body', ''],
  ['non-JSON', '{"licenseKey": '],
  ['plain text', 'hello'],
  ['JSON array', '[]'],
  ['JSON array of an object', '[{"token":"x"}]'],
  ['JSON string', '"token"'],
  ['JSON number', '42'],
  ['JSON null', 'null'],
  ['JSON true', 'true'],
];

const label = (what: string): string => (what === '' ? '' : `${what}: `);

/** {success:false, error:{code, message}} and nothing else, as JSON; code null: any code. */
export function expectCodedError(t: Asserts, res: Answer, status: number, code: string | null, what = ''): void {
  const w = label(what);
  t.equal(res.status, status, `${w}status ${status} (${res.text})`);
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${w}JSON`);
  t.same(Object.keys(res.body ?? {}).sort(), ['error', 'success'], `${w}only success and error`);
  t.equal(res.body?.success, false, `${w}success false`);
  t.same(Object.keys(res.body?.error ?? {}).sort(), ['code', 'message'], `${w}error {code, message}`);
  if (code !== null) t.equal(res.body?.error?.code, code, `${w}code ${code}`);
  else t.match(res.body?.error?.code, /^[A-Z_]+$/, `${w}a code`);
  t.type(res.body?.error?.message, 'string', `${w}message is a string`);
  t.ok(String(res.body?.error?.message ?? '').length > 0, `${w}a message`);
}

/** validate's refusals: {success:false, message} and nothing else, as JSON, with one of the statuses. */
export function expectMessageError(t: Asserts, res: Answer, statuses: number[], what: string, message?: string): void {
  t.ok(statuses.includes(res.status), `${what}: status ${res.status} in ${statuses.join('/')} (${res.text})`);
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON`);
  t.same(Object.keys(res.body ?? {}).sort(), ['message', 'success'], `${what}: {success, message}`);
  t.equal(res.body?.success, false, `${what}: success false`);
  t.ok(typeof res.body?.message === 'string' && res.body.message.length > 0, `${what}: a message`);
  if (message !== undefined) t.equal(res.body?.message, message, `${what}: "${message}"`);
}

/** The Retry-After header: whole seconds within the one-minute window. */
export function retryAfterSeconds(t: Asserts, res: Answer, what = ''): number {
  const header = res.headers.get('retry-after');
  t.ok(header !== null && /^\d+$/.test(header), `${label(what)}Retry-After is whole seconds (${header})`);
  const seconds = Number(header);
  t.ok(seconds >= 1 && seconds <= 60, `${label(what)}Retry-After within 1..60 (${seconds})`);
  return seconds;
}

/** The 429 of get-token, sign-token and validate: Retry-After, body {success:false, message, retryAfter}. */
export function expectRateLimited(t: Asserts, res: Answer, what = ''): void {
  t.equal(res.status, 429, `${label(what)}429 (${res.text})`);
  const seconds = retryAfterSeconds(t, res, what);
  t.same(res.body, { success: false, message: RATE_MESSAGE, retryAfter: seconds }, `${label(what)}{success, message, retryAfter}`);
}

/** A coded 503 SERVICE_UNAVAILABLE with Retry-After in whole seconds >= 1. */
export function expectUnavailable(t: Asserts, res: Answer, what: string): void {
  expectCodedError(t, res, 503, 'SERVICE_UNAVAILABLE', what);
  const header = res.headers.get('retry-after');
  t.ok(header !== null && /^\d+$/.test(header) && Number(header) >= 1, `${what}: Retry-After whole seconds (${header})`);
}

// ---- check-quota ---------------------------------------------------------------------------

export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** An answer with the time window of its request, to check a timestamp is the answer's own. */
export type Windowed = Answer & { before: number; after: number };

export async function windowed(send: () => Promise<Answer>): Promise<Windowed> {
  const before = Date.now();
  const res = await send();
  return { ...res, before, after: Date.now() };
}

/** check-quota's timestamp: an ISO 8601 UTC string of the time of the answer. */
export function expectCurrentTimestamp(t: Asserts, res: Windowed, what: string): void {
  const ts = res.body?.timestamp;
  t.type(ts, 'string', `${what}: timestamp is a string`);
  t.match(ts, ISO_UTC, `${what}: timestamp is ISO 8601 UTC`);
  const at = Date.parse(ts as string);
  t.ok(at >= res.before && at <= res.after, `${what}: timestamp is the time of this answer`);
}

/** check-quota's errors: exactly {success:false, error:{code, message}, timestamp[, data]}. */
export function expectCheckQuotaError(t: Asserts, res: Answer, status: number, code: string, what: string, data?: unknown): void {
  t.equal(res.status, status, `${what}: status ${status}`);
  const expected: Record<string, unknown> = {
    success: false,
    error: { code, message: res.body?.error?.message },
    timestamp: res.body?.timestamp,
  };
  if (data !== undefined) expected.data = data;
  t.strictSame(res.body, expected, `${what}: body`);
  t.type(res.body?.error?.message, 'string', `${what}: message is a string`);
  t.ok((res.body?.error?.message ?? '').length > 0, `${what}: message not empty`);
  t.match(res.body?.timestamp, ISO_UTC, `${what}: timestamp ISO UTC`);
}

// ---- the sign token --------------------------------------------------------------------------

/** A sign token as get-token and sign-token issue it: HS256 with the service's secret, the published claims, 5 minutes. */
export function expectSignToken(
  t: Asserts, token: string, secret: string,
  want: { firmaId: string; firmaAdi: string; imzaTipi: number; issuedFrom: number; issuedTo: number },
): void {
  const jwt = decodeJwt(token);
  t.same(jwt.header, HS256_HEADER, 'HS256, with the kid of the signing key');
  t.ok(signatureValid(token, secret), 'HMAC-SHA256 with the service secret');
  const p = jwt.payload;
  t.equal(p.iss, ISSUER, 'iss: JWT_ISSUER');
  t.equal(p.firma_id, want.firmaId);
  t.equal(p.firma_adi, want.firmaAdi);
  t.type(p.token_id, 'string');
  t.ok(String(p.token_id ?? '').length > 0, 'a token_id');
  t.equal(p.imza_tipi, want.imzaTipi);
  t.ok(Number.isInteger(p.iat), 'iat is an integer');
  t.ok((p.iat as number) >= want.issuedFrom && (p.iat as number) <= want.issuedTo, 'iat is the issue time');
  t.equal(p.exp, (p.iat as number) + 300, 'exp = iat + 300');
}
