import { createHmac, createPrivateKey, sign } from 'node:crypto';
import type { PublicJwk } from '@license-service/client';
import { ArtefactSigner, keysFromList } from '../../src/tokens/signingKeys.js';
import { nowSeconds } from './jwt.js';

// License tokens and receipts as the service signs them (its own ArtefactSigner, payload
// members in the format's order), and the same with a header of the test's choosing, signed
// by hand, for what the service never writes (another alg, a jku, a kid it does not own).

/** The base64url of a text: a JWS segment. */
export const seg = (text: string): string => Buffer.from(text).toString('base64url');

/** The signer of a service whose SIGNING_KEYS are these (the first signs), and its JWKS. */
export function signerOf(...keys: string[]): { signer: ArtefactSigner; jwks: { keys: (PublicJwk & { kid: string; x: string })[] } } {
  const signer = new ArtefactSigner(keysFromList(keys.join(','), 'test'));
  return { signer, jwks: JSON.parse(signer.jwksBody) };
}

/** A license token's payload in the format's order; overrides replace members in place, undefined removes one. */
export function licensePayload(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const iat = nowSeconds();
  return {
    typ: 'license', iss: 'license-service', firma_id: 'F7k2mQ9xWp', firma_adi: 'Şifa Eczanesi', active: true,
    license_exp: iat + 365 * 86400, total_quota: 100, used_quota: 7, remaining_quota: 93,
    domains: ['eczane.example.com', 'hastane.example.org'], iat, exp: iat + 86400, ...overrides,
  };
}

export function receiptPayload(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    typ: 'receipt', iss: 'license-service', jti: 'tok_4f9d2c1a8b7e', firma_id: 'F7k2mQ9xWp', imza_tipi: 1,
    documents: [{ name: 'reçete-2026-0001.xml', sha256: 'a'.repeat(64) }, { name: 'ek.xml', sha256: '0123456789abcdef'.repeat(4) }],
    iat: nowSeconds(), used_quota: 8, remaining_quota: 92, ...overrides,
  };
}

/** A compact JWS of any header and payload text, signed with Ed25519 by a SIGNING_KEYS key. */
export function signEd25519(key: string, headerJson: string, payloadJson: string): string {
  const input = `${seg(headerJson)}.${seg(payloadJson)}`;
  const privateKey = createPrivateKey({ key: Buffer.from(key, 'base64'), format: 'der', type: 'pkcs8' });
  return `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
}

/** The classic confusion: HS256 keyed with the public key's x, as a verifier that trusts alg would check it. */
export function signHs256(secret: string, headerJson: string, payloadJson: string): string {
  const input = `${seg(headerJson)}.${seg(payloadJson)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

/** The header the service writes, for a kid. */
export const edHeader = (kid: string): string => JSON.stringify({ alg: 'EdDSA', typ: 'JWT', kid });
