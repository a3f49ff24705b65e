import { createHmac } from 'node:crypto';
import type { Answer, Harness } from './harness.js';

// Shared helpers of the validate and check-quota tests: rate limits off, sign tokens in
// bulk (one get-token, then sign-token with the access token), JWTs crafted by hand.

export { NO_RATE_LIMITS } from './harness.js';

export const MSG = {
  EMPTY: 'Token boş olamaz',
  EXPIRED: 'Token süresi dolmuş',
  INVALID: 'Geçersiz token',
  USED: 'Bu token zaten kullanılmış. Yeni token alınız.',
  ORIGIN: 'Bu domain için yetki yok',
  QUOTA: 'İmza kotası doldu',
} as const;

export interface Lic {
  licenseKey: string;
  firmaId: string;
  password: string;
}

/** Sign tokens of one license: the first from get-token, the rest from sign-token. */
export class TokenSource {
  private accessToken: string | null = null;

  constructor(
    private readonly h: Harness,
    readonly lic: Lic,
  ) {}

  async accessTokenOf(): Promise<string> {
    if (this.accessToken === null) await this.next();
    return this.accessToken as string;
  }

  async next(imzaTipi = 0): Promise<string> {
    if (this.accessToken === null) {
      const got = await this.h.getToken(this.lic.licenseKey, this.lic.password, imzaTipi);
      if (got.status !== 200) throw new Error(`get-token: ${got.status} ${got.text}`);
      this.accessToken = got.body.accessToken as string;
      return got.body.signToken as string;
    }
    const signed = await this.h.signToken(this.accessToken, imzaTipi);
    if (signed.status !== 200) throw new Error(`sign-token: ${signed.status} ${signed.text}`);
    return signed.body.signToken as string;
  }

  async many(n: number, imzaTipi = 0): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(await this.next(imzaTipi));
    return out;
  }
}

export function b64url(value: string | Buffer): string {
  return Buffer.from(value).toString('base64url');
}

/** The decoded header (0) or payload (1) of a JWT. */
export function jwtPart(token: string, index: 0 | 1): Record<string, unknown> {
  const part = token.split('.')[index];
  if (part === undefined) throw new Error('not a JWT');
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/**
 * header.payload.signature built by hand; the signature is HMAC over the first two parts
 * with `secret` ('sha256' for HS256, 'sha512' for HS512), empty when hash is null.
 */
export function craftJwt(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  secret: string | Buffer,
  hash: 'sha256' | 'sha512' | null = 'sha256',
): string {
  const signingInput = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  const signature = hash === null ? '' : createHmac(hash, secret).update(signingInput).digest('base64url');
  return `${signingInput}.${signature}`;
}

export const HS256_HEADER = { alg: 'HS256', typ: 'JWT' };

/** The license as the admin API sees it now (live quota). */
export async function adminView(h: Harness, licenseKey: string): Promise<Record<string, unknown>> {
  const res: Answer = await h.admin('GET', `/admin/v1/licenses/${licenseKey}`);
  if (res.status !== 200) throw new Error(`admin GET: ${res.status} ${res.text}`);
  return res.body.data as Record<string, unknown>;
}

export async function adminOk(h: Harness, method: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await h.admin(method, path, body);
  if (res.status !== 200) throw new Error(`admin ${method} ${path}: ${res.status} ${res.text}`);
  return res.body.data as Record<string, unknown>;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
