import { createSecretKey, type KeyObject } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import type { JwtKey } from '../config/secrets.js';
import { verifiedClaims } from './hs256.js';
import { COMPACT_KIDLESS_HEADERS, headerSegment, isKidlessHeader, segmentOf } from './jwtHeader.js';

export const SIGN_TOKEN_SECONDS = 300;
export const ACCESS_TOKEN_SECONDS = 900;

/** Claims of a sign token, in the published order (docs/api.md#sign-and-access-tokens), plus the type that keeps it out of Bearer use. */
export interface SignClaims {
  firma_id: string;
  firma_adi: string;
  token_id: string;
  imza_tipi: 0 | 1;
  iat: number;
  exp: number;
  typ: 'sign';
}

export interface AccessClaims {
  firma_id: string;
  iat: number;
  exp: number;
  typ: 'access';
  /** the license's token generation when issued: a password change or a deactivation raises it, revoking the token */
  gen: number;
}

export type Verified<T> = { claims: T; expired?: undefined } | { claims?: undefined; expired: boolean };

const ID = /^[A-Za-z0-9_-]{1,64}$/;
/** Seconds since the epoch a token may name (up to year 5138): its times end up in Postgres timestamps. */
const MAX_SECONDS = 1e11;

function isTime(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= MAX_SECONDS;
}
const INVALID = { expired: false } as const;
const EXPIRED = { expired: true } as const;

function isSignClaims(p: Record<string, unknown>): p is SignClaims & Record<string, unknown> {
  return (
    p.typ === 'sign' &&
    typeof p.firma_id === 'string' && ID.test(p.firma_id) &&
    typeof p.firma_adi === 'string' &&
    typeof p.token_id === 'string' && ID.test(p.token_id) &&
    (p.imza_tipi === 0 || p.imza_tipi === 1) &&
    isTime(p.iat) && isTime(p.exp)
  );
}

function isAccessClaims(p: Record<string, unknown>): p is AccessClaims & Record<string, unknown> {
  return (
    p.typ === 'access' && typeof p.firma_id === 'string' && ID.test(p.firma_id) &&
    isTime(p.iat) && isTime(p.exp) && Number.isSafeInteger(p.gen) && (p.gen as number) >= 0
  );
}

/**
 * HS256 signers and verifiers, built once at start. The first key signs, with its kid in
 * the header; every key verifies the tokens whose header names it (key rotation: docs/operations.md#key-rotation).
 * A token's header is looked up whole among the headers this service writes and the
 * compact kid-less ones (jwtHeader.ts), which the signing key verifies; only a header found
 * in neither is parsed, bounded, to see whether it is another spelling of a kid-less one.
 * So a token naming another algorithm, an unknown or retired kid, or anything else to act
 * on is refused before any HMAC is computed.
 */
export class TokenService {
  private readonly sign: (payload: object) => string;
  /** header segment → the key that verifies the tokens under it */
  private readonly keyOfHeader = new Map<string, KeyObject>();
  /** the key of kid-less tokens: the one that signs */
  private readonly signingKey: KeyObject;

  constructor(keys: readonly JwtKey[], private readonly issuer: string) {
    const [first] = keys;
    if (first === undefined) throw new Error('TokenService: no key');
    this.sign = createSigner({ key: Buffer.from(first.secret), algorithm: 'HS256', kid: first.kid, iss: issuer });
    for (const { kid, secret } of keys) this.keyOfHeader.set(headerSegment(kid), createSecretKey(Buffer.from(secret)));
    this.signingKey = this.keyOfHeader.get(headerSegment(first.kid)) as KeyObject;
    for (const header of COMPACT_KIDLESS_HEADERS) {
      const segment = segmentOf(header);
      if (!isKidlessHeader(segment)) throw new Error(`TokenService: ${header} is not a kid-less header`);
      this.keyOfHeader.set(segment, this.signingKey);
    }
    if (!this.sign({ iat: 0 }).startsWith(`${headerSegment(first.kid)}.`)) throw new Error('TokenService: unexpected token header');
  }

  signSignToken(claims: Omit<SignClaims, 'typ'>): string {
    return this.sign({ ...claims, typ: 'sign' });
  }

  /** generation: the license's token generation now (lua/includes/issueToken.lua) */
  signAccessToken(firmaId: string, iat: number, generation: number): string {
    return this.sign({ firma_id: firmaId, iat, exp: iat + ACCESS_TOKEN_SECONDS, typ: 'access', gen: generation });
  }

  /** graceMs: a token past its exp by at most this much still verifies (a release comes after the redemption) */
  verifySignToken(token: string, graceMs = 0): Verified<SignClaims> {
    const payload = this.decode(token, graceMs);
    if (payload === null) return INVALID;
    if (payload === EXPIRED) return EXPIRED;
    return isSignClaims(payload) ? { claims: payload } : INVALID;
  }

  verifyAccessToken(token: string): AccessClaims | null {
    const payload = this.decode(token);
    if (payload === null || payload === EXPIRED) return null;
    return isAccessClaims(payload) ? payload : null;
  }

  /**
   * The claims of a token this service can vouch for, EXPIRED for such a token past its exp
   * (checked here, so an expired token never reaches Redis), null for anything else: iss
   * must be JWT_ISSUER, iat and exp numbers, nbf (when present) passed.
   */
  private decode(token: string, graceMs = 0): Record<string, unknown> | typeof EXPIRED | null {
    const headerEnd = token.indexOf('.');
    if (headerEnd < 0) return null;
    const header = token.slice(0, headerEnd);
    const key = this.keyOfHeader.get(header) ?? (isKidlessHeader(header) ? this.signingKey : undefined);
    if (key === undefined) return null;
    const claims = verifiedClaims(token, headerEnd, key);
    if (claims === null || claims.iss !== this.issuer || typeof claims.iat !== 'number' || typeof claims.exp !== 'number') return null;
    const now = Date.now();
    if (claims.nbf !== undefined && !(typeof claims.nbf === 'number' && now >= claims.nbf * 1000)) return null;
    return now <= claims.exp * 1000 + graceMs ? claims : EXPIRED;
  }
}
