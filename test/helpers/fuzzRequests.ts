import fc from 'fast-check';
import { jwtOfTexts } from './jwt.js';

// Fuzzing (test/system/fuzz.test.ts), part 1: run parameters, and requests as templates whose
// placeholders (real credentials, crafted tokens) are resolved when a run executes.

// ---- run parameters -------------------------------------------------------------------------

function intFromEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value)) throw new Error(`${name} must be an integer, got ${JSON.stringify(text)}`);
  return value;
}

/** FUZZ_SEED (default fixed, so `make test` is reproducible); `make fuzz` passes a random one. */
export const FUZZ_SEED = intFromEnv('FUZZ_SEED', 20261122) | 0;
/** FUZZ_RUNS: the base number of runs of a property (each property runs a multiple of it). */
export const FUZZ_RUNS = Math.max(1, intFromEnv('FUZZ_RUNS', 100));
/** FUZZ_ONLY: run only the properties whose name contains this text. */
export const FUZZ_ONLY = process.env.FUZZ_ONLY ?? '';
/** FUZZ_PATH: replay one counterexample (with FUZZ_SEED and FUZZ_ONLY, as fast-check prints it). */
export const FUZZ_PATH = process.env.FUZZ_PATH || undefined;
/** FUZZ_COLLECT=1: do not stop at the first failure; list every distinct one at the end. */
export const FUZZ_COLLECT = process.env.FUZZ_COLLECT === '1';

export function runsFor(weight: number): number {
  return Math.max(3, Math.round(FUZZ_RUNS * weight));
}

// ---- placeholders ---------------------------------------------------------------------------

/** Real values of the running service, filled in when a run executes. */
export type RealKind =
  | 'key' | 'keyUpper' | 'key2' | 'victimKey' | 'password' | 'password2' | 'firmaId' | 'firmaId2'
  | 'access' | 'access2' | 'accessInactive' | 'sign' | 'sign2' | 'usedSign' | 'inactiveSign' | 'noQuotaSign'
  | 'admin';

export class Real {
  constructor(readonly kind: RealKind) {}
  [fc.toStringMethod](): string {
    return `Real(${this.kind})`;
  }
}

/** Literal JSON text, for what JSON.stringify cannot write: -0, 1e309, deep nesting. */
export class Raw {
  constructor(readonly text: string) {}
  [fc.toStringMethod](): string {
    return `Raw(${JSON.stringify(this.text.length > 80 ? `${this.text.slice(0, 80)}…(${this.text.length})` : this.text)})`;
  }
}

/** Seconds from the moment the run executes (iat, exp of crafted tokens). */
export class Rel {
  constructor(readonly seconds: number) {}
  [fc.toStringMethod](): string {
    return `Rel(${this.seconds})`;
  }
}

/** A string made of parts, some of them placeholders. */
export class Cat {
  constructor(readonly parts: readonly Tpl[]) {}
  [fc.toStringMethod](): string {
    return `Cat(${fc.stringify(this.parts)})`;
  }
}

/** A JSON object written with its keys as given, duplicates included. */
export class Pairs {
  constructor(readonly pairs: readonly (readonly [string, FV])[]) {}
  [fc.toStringMethod](): string {
    return `Pairs(${fc.stringify(this.pairs)})`;
  }
}

export interface CraftSpec {
  header: FV;
  claims: FV;
  /** 'real': the service's own secret, so the claims are what gets tested */
  key: 'real' | 'wrong' | 'empty';
  hash: 'sha256' | 'sha512' | 'none';
  mangle: 'none' | 'extra-part' | 'no-signature' | 'trailing-dot' | 'padded' | 'spaces' | 'two-tokens';
}

/** A JWT built by hand when the run executes. */
export class Crafted {
  constructor(readonly spec: CraftSpec) {}
  [fc.toStringMethod](): string {
    return `Crafted(${fc.stringify(this.spec)})`;
  }
}

/** A generated JSON-ish value with placeholders. */
export type FV =
  | null | boolean | number | string | Real | Raw | Rel | Cat | Pairs | Crafted
  | FV[] | { [key: string]: FV };

export type Tpl = string | Cat | Real | Crafted;

export type Body =
  | { kind: 'json'; value: FV }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'none' };

/** One generated request. */
export interface Req {
  method: string;
  path: Tpl;
  headers: Record<string, Tpl | undefined>;
  body: Body;
}

/** What fills the placeholders in. */
export interface Resolver {
  real(kind: RealKind): Promise<string>;
  jwtSecret: string;
}

export async function resolveTpl(r: Resolver, tpl: Tpl): Promise<string> {
  if (typeof tpl === 'string') return tpl;
  if (tpl instanceof Real) return r.real(tpl.kind);
  if (tpl instanceof Crafted) return craft(r, tpl.spec);
  let out = '';
  for (const part of tpl.parts) out += await resolveTpl(r, part);
  return out;
}

/** JSON text of a generated value, placeholders filled in. */
export async function toJson(r: Resolver, v: FV): Promise<string> {
  if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Raw) return v.text;
  if (v instanceof Rel) return String(Math.floor(Date.now() / 1000) + v.seconds);
  if (v instanceof Real || v instanceof Cat || v instanceof Crafted) return JSON.stringify(await resolveTpl(r, v));
  if (v instanceof Pairs) {
    const parts: string[] = [];
    for (const [k, x] of v.pairs) parts.push(`${JSON.stringify(k)}:${await toJson(r, x)}`);
    return `{${parts.join(',')}}`;
  }
  if (Array.isArray(v)) {
    const parts: string[] = [];
    for (const x of v) parts.push(await toJson(r, x));
    return `[${parts.join(',')}]`;
  }
  const parts: string[] = [];
  for (const k of Object.keys(v)) parts.push(`${JSON.stringify(k)}:${await toJson(r, v[k] as FV)}`);
  return `{${parts.join(',')}}`;
}

async function craft(r: Resolver, spec: CraftSpec): Promise<string> {
  const secret = spec.key === 'real' ? r.jwtSecret : spec.key === 'wrong' ? 'not-the-secret-0123456789abcdef0123456789' : '';
  const token = jwtOfTexts(await toJson(r, spec.header), await toJson(r, spec.claims), secret, spec.hash === 'none' ? null : spec.hash);
  const cut = token.lastIndexOf('.');
  const input = token.slice(0, cut);
  const signature = token.slice(cut + 1);
  switch (spec.mangle) {
    case 'none': return token;
    case 'extra-part': return `${token}.${signature}`;
    case 'no-signature': return `${input}.`;
    case 'trailing-dot': return `${token}.`;
    case 'padded': return `${token}==`;
    case 'spaces': return ` ${token}\t`;
    case 'two-tokens': return `${token} ${token}`;
  }
}

export async function bodyBytes(r: Resolver, body: Body): Promise<Buffer | null> {
  switch (body.kind) {
    case 'json': return Buffer.from(await toJson(r, body.value), 'utf8');
    case 'text': return Buffer.from(body.text, 'utf8');
    case 'bytes': return Buffer.from(body.bytes);
    case 'none': return null;
  }
}
