import { createSigner, createVerifier, TokenError } from 'fast-jwt';
import type { JwtKey } from '../config.js';

export const SIGN_TOKEN_SECONDS = 300;
export const ACCESS_TOKEN_SECONDS = 900;

/** Claims of a sign token, in the spec's order, plus the type that keeps it out of Bearer use. */
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

/** The first part of every token signed with a key: its header, {"alg":"HS256","typ":"JWT","kid":...}. */
export function headerSegment(kid: string): string {
  return Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid })).toString('base64url');
}

type Verify = (token: string) => Record<string, unknown>;

/**
 * HS256 signers and verifiers, built once at start. The first key signs, with its kid in
 * the header; every key verifies the tokens whose header names it (key rotation: README).
 * A token's header is matched whole against the headers this service writes, so a token
 * naming another algorithm, an unknown or retired kid, or written by anyone else's
 * encoder is refused before any HMAC is computed.
 */
export class TokenService {
  private readonly sign: (payload: object) => string;
  private readonly verifiers = new Map<string, Verify>();

  constructor(keys: readonly JwtKey[], issuer: string) {
    const [first] = keys;
    if (first === undefined) throw new Error('TokenService: no key');
    this.sign = createSigner({ key: Buffer.from(first.secret), algorithm: 'HS256', kid: first.kid, iss: issuer });
    for (const { kid, secret } of keys) {
      // exp is checked here, so an expired token never reaches Redis; exp and iat must be numbers
      this.verifiers.set(headerSegment(kid), createVerifier({
        key: Buffer.from(secret), algorithms: ['HS256'], requiredClaims: ['exp', 'iat', 'iss'], allowedIss: issuer, clockTolerance: 0,
      }));
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

  verifySignToken(token: string): Verified<SignClaims> {
    const payload = this.decode(token);
    if (payload === null) return INVALID;
    if (payload === EXPIRED) return EXPIRED;
    return isSignClaims(payload) ? { claims: payload } : INVALID;
  }

  verifyAccessToken(token: string): AccessClaims | null {
    const payload = this.decode(token);
    if (payload === null || payload === EXPIRED) return null;
    return isAccessClaims(payload) ? payload : null;
  }

  private decode(token: string): Record<string, unknown> | typeof EXPIRED | null {
    const verify = this.verifiers.get(token.slice(0, token.indexOf('.')));
    if (verify === undefined) return null;
    try {
      const payload = verify(token);
      return typeof payload === 'object' && payload !== null ? payload : null;
    } catch (err) {
      if (err instanceof TokenError && err.code === TokenError.codes.expired) return EXPIRED;
      return null;
    }
  }
}
