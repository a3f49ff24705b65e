import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ed25519Signer, type Ed25519Sign } from './ed25519.js';
import { segmentOf } from './jwtHeader.js';

// The Ed25519 keys of the artefacts third parties verify offline (license tokens, signing
// receipts): compact JWS with alg EdDSA. The first key signs; every key is published at
// /.well-known/jwks.json, so a key can be added ahead of a rotation and an old one kept,
// as a public key alone, until what it signed has expired. A key's kid is its RFC 7638
// thumbprint: the same key has the same kid in every process and instance, with nothing
// to configure.

/** One key of the set: its kid, its public JWK, and its private half when it can sign. */
export interface SigningKey {
  kid: string;
  jwk: Ed25519Jwk;
  privateKey: KeyObject | null;
}

export interface Ed25519Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

/**
 * A fixed, published Ed25519 key (RFC 8032's first test vector) for what signs nothing a client trusts (the
 * documents' examples, the bench's configuration reads): never a service's key.
 */
export const PLACEHOLDER_SIGNING_KEY = 'MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g';

/** The signer of the documents' examples: the placeholder key, so an example verifies against the example JWKS. */
export function exampleSigner(): ArtefactSigner {
  return new ArtefactSigner(keysFromList(PLACEHOLDER_SIGNING_KEY, 'the placeholder key'));
}

const PEM_BLOCK = /-----BEGIN ((?:ENCRYPTED )?PRIVATE KEY|PUBLIC KEY)-----\r?\n([A-Za-z0-9+/=\r\n]+?)-----END \1-----/g;
const GENERATE = 'openssl genpkey -algorithm ed25519';

/** An Ed25519 key (private, or public), or a message saying why it is not one. */
function ed25519Key(der: Buffer, where: string, kind: 'private' | 'public' | 'either'): KeyObject | string {
  let key: KeyObject | null = null;
  if (kind !== 'public') {
    try {
      key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    } catch { /* not a PKCS#8 private key */ }
  }
  if (key === null && kind !== 'private') {
    try {
      key = createPublicKey({ key: der, format: 'der', type: 'spki' });
    } catch { /* not an SPKI public key */ }
  }
  if (key === null) return `${where} is not an unencrypted PKCS#8 ${kind === 'public' ? 'public' : 'private'} key (${GENERATE})`;
  if (key.asymmetricKeyType !== 'ed25519') return `${where} is an ${key.asymmetricKeyType ?? 'unknown'} key, not Ed25519 (${GENERATE})`;
  return key;
}

/** The RFC 7638 thumbprint of an Ed25519 public JWK: base64url SHA-256 of {"crv","kty","x"}. */
export function thumbprint(x: string): string {
  return createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
}

function signingKey(key: KeyObject): SigningKey {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const x = (publicKey.export({ format: 'jwk' }) as { x: string }).x;
  const kid = thumbprint(x);
  return { kid, jwk: { kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' }, privateKey: key.type === 'private' ? key : null };
}

/** The keys of a set, in order; throws unless the first can sign and no key repeats. */
function keySet(keys: KeyObject[], source: string): SigningKey[] {
  const set = keys.map(signingKey);
  if (set.length === 0) throw new Error(`${source} holds no key (${GENERATE})`);
  if (set[0]?.privateKey === null) throw new Error(`${source}: the first key signs, so it must be a private key`);
  const kids = new Set(set.map((k) => k.kid));
  if (kids.size !== set.length) throw new Error(`${source} names the same key twice`);
  return set;
}

/**
 * SIGNING_KEYS_FILE: a PEM file of Ed25519 keys, "PRIVATE KEY" blocks (what `openssl genpkey
 * -algorithm ed25519` writes) and, after the first, "PUBLIC KEY" blocks of keys retired
 * from signing.
 */
export function keysFromPem(text: string, source: string): SigningKey[] {
  const keys: KeyObject[] = [];
  let n = 0;
  for (const m of text.matchAll(PEM_BLOCK)) {
    n++;
    if (m[1] === 'ENCRYPTED PRIVATE KEY') throw new Error(`${source}: key ${n} is encrypted; the service reads unencrypted keys (${GENERATE})`);
    const key = ed25519Key(Buffer.from((m[2] as string).replace(/\s+/g, ''), 'base64'), `${source}: key ${n}`, m[1] === 'PUBLIC KEY' ? 'public' : 'private');
    if (typeof key === 'string') throw new Error(key);
    keys.push(key);
  }
  return keySet(keys, source);
}

/**
 * SIGNING_KEYS: the same keys on one line, comma-separated, each the base64 of its DER form
 * (`openssl genpkey -algorithm ed25519 -outform DER | base64 -w0`, 64 characters).
 */
export function keysFromList(list: string, source: string): SigningKey[] {
  const keys = list.split(',').map((entry, i) => {
    const text = entry.trim();
    const where = `${source}: key ${i + 1}`;
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) throw new Error(`${where} is not base64 (${GENERATE} -outform DER | base64 -w0)`);
    const key = ed25519Key(Buffer.from(text, 'base64'), where, 'either');
    if (typeof key === 'string') throw new Error(key);
    return key;
  });
  return keySet(keys, source);
}

/**
 * The artefact keys of the environment: SIGNING_KEYS_FILE or SIGNING_KEYS, not both. Neither
 * set (or both empty) is none, []: a deployment of before these keys starts as it did, and
 * only license validation and sign answer 503 (src/routes/replies.ts). A key that is set and
 * cannot be used throws a one-line message: a key given wrong is never taken for none.
 */
export function signingKeysOf(env: Record<string, string | undefined>): SigningKey[] {
  const file = env.SIGNING_KEYS_FILE ?? '';
  const list = env.SIGNING_KEYS ?? '';
  if (file !== '' && list !== '') throw new Error('set SIGNING_KEYS_FILE or SIGNING_KEYS, not both');
  if (file === '' && list === '') return [];
  if (list !== '') return keysFromList(list, 'SIGNING_KEYS');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`SIGNING_KEYS_FILE ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
  return keysFromPem(text, `SIGNING_KEYS_FILE ${file}`);
}

/** The settings an instance without signing keys lacks, as its 503s' document and the warning at start name them. */
export const SIGNING_KEYS_SETTINGS = 'SIGNING_KEYS_FILE or SIGNING_KEYS';

/** The warning logged once at each start without signing keys (src/cli/server.ts). */
export const SIGNING_KEYS_MISSING_WARNING = `no signing keys (${SIGNING_KEYS_SETTINGS} unset): license validation and `
  + `POST /api/Signature/sign answer 503 and /.well-known/jwks.json is empty; everything else is served (${GENERATE}, `
  + 'docs/operations.md#signing-keys)';

/** The signer of a key set; null for none: the routes that sign are then built to answer 503 (src/routes/replies.ts). */
export function artefactSignerOf(keys: readonly SigningKey[]): ArtefactSigner | null {
  return keys.length === 0 ? null : new ArtefactSigner(keys);
}

/** Signs compact JWS (EdDSA) with the first key; the JWKS of every key. Built once at start. */
export class ArtefactSigner {
  readonly kid: string;
  /** GET /.well-known/jwks.json's body, serialised once */
  readonly jwksBody: string;
  readonly #sign: Ed25519Sign;
  readonly #header: string;

  constructor(keys: readonly SigningKey[]) {
    const first = keys[0];
    if (!first?.privateKey) throw new Error('the first signing key must be a private key');
    this.kid = first.kid;
    this.#sign = ed25519Signer(first.privateKey);
    this.#header = segmentOf(JSON.stringify({ alg: 'EdDSA', typ: 'JWT', kid: first.kid }));
    this.jwksBody = JSON.stringify({ keys: keys.map((k) => k.jwk) });
  }

  /** header.payload.signature, the payload being this JSON text as given (its bytes are what is signed). */
  sign(payloadJson: string): string {
    const input = `${this.#header}.${segmentOf(payloadJson)}`;
    return `${input}.${this.#sign(Buffer.from(input)).toString('base64url')}`;
  }
}
