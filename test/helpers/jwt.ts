import { createHmac } from 'node:crypto';

// The one JWT helper of the tests: tokens decoded and crafted by hand (HMAC over
// base64url(header) "." base64url(payload), as published), so the tests never trust
// the service's own token code.

/** The header of the tokens a service with JWT_SECRET alone signs (its key's kid is "default"). */
export const HS256_HEADER = { alg: 'HS256', typ: 'JWT', kid: 'default' };

/** The published header, without a kid: verified with the key that signs. */
export const PUBLISHED_HEADER = { alg: 'HS256', typ: 'JWT' };

/** JWT_ISSUER's default: the iss of every token, checked on verify. */
export const ISSUER = 'license-service';

export type JwtHash = 'sha256' | 'sha512';

export interface DecodedJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signature: string;
  signingInput: string;
}

/** The claims of a sign token the service issued. */
export interface SignClaims {
  firma_id: string;
  firma_adi: string;
  token_id: string;
  imza_tipi: number;
  iat: number;
  exp: number;
  typ: string;
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** Header, payload (unverified) and signature of a JWT; throws when it has not three parts. */
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

/** The claims of a sign token, unverified (to learn the token id of a token the service issued). */
export function claimsOf(jwt: string): SignClaims {
  return decodeJwt(jwt).payload as unknown as SignClaims;
}

/** The HMAC of a signing input, base64url. */
export function hmac(signingInput: string, secret: string | Buffer, hash: JwtHash = 'sha256'): string {
  return createHmac(hash, secret).update(signingInput).digest('base64url');
}

export function signatureValid(token: string, secret: string): boolean {
  const d = decodeJwt(token);
  return hmac(d.signingInput, secret) === d.signature;
}

/**
 * header.payload.signature from the JSON texts of header and payload (any text: the fuzz
 * sends malformed JSON too); the signature is the HMAC with `secret`, empty when hash is null.
 */
export function jwtOfTexts(header: string, payload: string, secret: string | Buffer, hash: JwtHash | null = 'sha256'): string {
  const signingInput = `${Buffer.from(header).toString('base64url')}.${Buffer.from(payload).toString('base64url')}`;
  return `${signingInput}.${hash === null ? '' : hmac(signingInput, secret, hash)}`;
}

/** A JWT built by hand: any header, any payload, signed with `secret` ('sha256' for HS256, 'sha512' for HS512, null: no signature). */
export function craftJwt(
  header: Record<string, unknown>, payload: Record<string, unknown>, secret: string | Buffer, hash: JwtHash | null = 'sha256',
): string {
  return jwtOfTexts(JSON.stringify(header), JSON.stringify(payload), secret, hash);
}

/** The JSON text of an object with raw member text put first: `{"a":1}` + `"a":2` → `{"a":2,"a":1}` (a repeat JSON.stringify cannot write). */
export function withMembersFirst(json: string, members: string): string {
  if (!json.startsWith('{')) throw new Error(`not an object: ${json}`);
  return json === '{}' ? `{${members}}` : `{${members},${json.slice(1)}`;
}

/** The token with its payload replaced and its signature kept: what a forger without the secret can send. */
export function withPayload(token: string, payload: Record<string, unknown>): string {
  const [header, , signature] = token.split('.');
  return `${header}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${signature}`;
}

/** An access token for firmaId as the service issues it (15 minutes, generation 0), signed with `secret`; overrides win. */
export function craftAccessToken(firmaId: string, secret: string, overrides: Record<string, unknown> = {}): string {
  const iat = nowSeconds();
  return craftJwt(HS256_HEADER, { firma_id: firmaId, iat, exp: iat + 900, typ: 'access', gen: 0, iss: ISSUER, ...overrides }, secret);
}

/** The Authorization header of a Bearer token. */
export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
