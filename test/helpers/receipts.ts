import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import type { Answer, Client } from './http.js';

// POST /api/Signature/sign as a client calls it, and its receipt as a third party checks it:
// with node:crypto alone, against the keys of GET /.well-known/jwks.json.

/** A key of the set, as published. */
export interface Jwk {
  kty: string;
  crv: string;
  x: string;
  kid: string;
}

export const SIGN = '/api/Signature/sign';

export interface SignedDocument {
  name: string;
  sha256: string;
}

/** A document with a random digest (lower-case hex). */
export function documentNamed(name: string): SignedDocument {
  return { name, sha256: randomBytes(32).toString('hex') };
}

export function sign(client: Client, body: unknown, idempotencyKey?: string): Promise<Answer> {
  return client.request('POST', SIGN, body, idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey });
}

/** The receipt's parts: its header, its payload's exact text (the bytes signed) and the payload read. */
export function receiptParts(jws: string): { header: Record<string, unknown>; text: string; payload: Record<string, unknown> } {
  const [h, p] = jws.split('.') as [string, string];
  const text = Buffer.from(p, 'base64url').toString('utf8');
  return { header: JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>, text, payload: JSON.parse(text) as Record<string, unknown> };
}

/** The lower-case hex SHA-256 of the payload bytes: what Postgres keeps. */
export function receiptDigest(jws: string): string {
  return createHash('sha256').update(Buffer.from(jws.split('.')[1] as string, 'base64url')).digest('hex');
}

/** Whether the JWS verifies (EdDSA) with the key of the set its kid names; false for no such kid. */
export function verifiesWith(jws: string, keys: Jwk[]): boolean {
  const parts = jws.split('.');
  if (parts.length !== 3) return false;
  const [h, p, s] = parts as [string, string, string];
  let kid: unknown;
  try {
    kid = (JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as { kid?: unknown }).kid;
  } catch {
    return false;
  }
  const jwk = keys.find((k) => k.kid === kid);
  if (!jwk) return false;
  const key = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' });
  return verify(null, Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'));
}

/** The published keys. */
export async function jwksOf(client: Client): Promise<Jwk[]> {
  const res = await client.request('GET', '/.well-known/jwks.json');
  if (res.status !== 200) throw new Error(`jwks: ${res.status} ${res.text}`);
  return (res.body as { keys: Jwk[] }).keys;
}
