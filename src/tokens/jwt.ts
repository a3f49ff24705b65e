import { createSigner, createVerifier, TokenError } from 'fast-jwt';

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
    isTime(p.iat) && isTime(p.exp)
  );
}

/** HS256 signers and verifiers, built once at start. */
export class TokenService {
  private readonly sign: (payload: object) => string;
  private readonly verify: (token: string) => Record<string, unknown>;

  constructor(secret: string) {
    const key = Buffer.from(secret);
    this.sign = createSigner({ key, algorithm: 'HS256' });
    // exp is checked here, so an expired token never reaches Redis; exp and iat must be numbers
    this.verify = createVerifier({ key, algorithms: ['HS256'], requiredClaims: ['exp', 'iat'], clockTolerance: 0 });
  }

  signSignToken(claims: Omit<SignClaims, 'typ'>): string {
    return this.sign({ ...claims, typ: 'sign' });
  }

  signAccessToken(firmaId: string, iat: number): string {
    return this.sign({ firma_id: firmaId, iat, exp: iat + ACCESS_TOKEN_SECONDS, typ: 'access' });
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
    try {
      const payload = this.verify(token);
      return typeof payload === 'object' && payload !== null ? payload : null;
    } catch (err) {
      if (err instanceof TokenError && err.code === TokenError.codes.expired) return EXPIRED;
      return null;
    }
  }
}
