import { createHmac } from 'node:crypto';
import type { Answer, Harness } from './harness.js';

// Helpers of the auth tests (get-token, sign-token, rate limits, history): JWT decoding and
// crafting by hand, so the tests do not trust the service's own token code.

export interface DecodedJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signature: string;
  signingInput: string;
}

function b64urlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeJwt(token: string): DecodedJwt {
  const parts = token.split('.');
  if (parts.length !== 3) throw new Error(`not a JWT: ${token}`);
  const [h, p, s] = parts as [string, string, string];
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>,
    signature: s,
    signingInput: `${h}.${p}`,
  };
}

/** HMAC-SHA256 over base64url(header) + "." + base64url(payload), as the spec defines it. */
export function hs256(signingInput: string, secret: string): string {
  return createHmac('sha256', Buffer.from(secret)).update(signingInput).digest('base64url');
}

export function signatureValid(token: string, secret: string): boolean {
  const d = decodeJwt(token);
  return hs256(d.signingInput, secret) === d.signature;
}

/** A JWT built by hand: any header, any payload, signed with the given secret. */
export function craftJwt(payload: Record<string, unknown>, secret: string, header: Record<string, unknown> = { alg: 'HS256', typ: 'JWT' }): string {
  const input = `${b64urlJson(header)}.${b64urlJson(payload)}`;
  return `${input}.${hs256(input, secret)}`;
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** An access token for firmaId, signed with the service's secret unless told otherwise. */
export function craftAccessToken(h: Harness, firmaId: string, overrides: Record<string, unknown> = {}, secret = h.config.jwtSecret): string {
  const iat = nowSeconds();
  return craftJwt({ firma_id: firmaId, iat, exp: iat + 900, typ: 'access', ...overrides }, secret);
}

export function authHeader(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** Resolves after ms; used only to space events apart, never to assert on time. */
export function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The assertions these helpers use, so they accept any tap test object. */
export interface Asserts {
  equal(found: unknown, wanted: unknown, ...message: [] | [string]): boolean;
  same(found: unknown, wanted: unknown, ...message: [] | [string]): boolean;
  ok(found: unknown, ...message: [] | [string]): boolean;
  type(found: unknown, type: string, ...message: [] | [string]): boolean;
  match(found: unknown, pattern: RegExp, ...message: [] | [string]): boolean;
}

/** get-token / sign-token / history errors: exactly {success:false, error:{code, message}}. */
export function expectCodedError(t: Asserts, res: Answer, status: number, code: string): void {
  t.equal(res.status, status, `status ${status} (${res.text})`);
  t.same(Object.keys(res.body ?? {}).sort(), ['error', 'success'], 'only success and error');
  t.equal(res.body?.success, false);
  t.same(Object.keys(res.body?.error ?? {}).sort(), ['code', 'message']);
  t.equal(res.body?.error?.code, code);
  t.type(res.body?.error?.message, 'string');
  t.ok(String(res.body?.error?.message ?? '').length > 0, 'a message');
  t.match(res.headers.get('content-type') ?? '', /^application\/json/);
}
