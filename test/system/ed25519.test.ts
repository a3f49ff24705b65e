import { createPrivateKey, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { ED25519_LIBRARY, ed25519Signer, opensslSigner, sodiumSigner } from '../../src/tokens/ed25519.js';
import { ArtefactSigner, keysFromList, PLACEHOLDER_SIGNING_KEY } from '../../src/tokens/signingKeys.js';
import { FUZZ_SEED } from '../helpers/fuzz.js';

// The Ed25519 signers of license tokens and receipts (src/tokens/ed25519.ts): libsodium signs
// where its addon loads (here it must: the project's install puts it there), and its
// signatures are OpenSSL's byte for byte, so a verifier cannot tell which library signed.

const placeholder = createPrivateKey({ key: Buffer.from(PLACEHOLDER_SIGNING_KEY, 'base64'), format: 'der', type: 'pkcs8' });

t.test('libsodium signs in this install', async (t) => {
  t.equal(ED25519_LIBRARY, 'libsodium');
  t.not(sodiumSigner(placeholder), null);
});

t.test("RFC 8032's first test vector: the empty message, by both libraries", async (t) => {
  const expected = 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b';
  t.equal(opensslSigner(placeholder)(Buffer.alloc(0)).toString('hex'), expected);
  t.equal(sodiumSigner(placeholder)?.(Buffer.alloc(0)).toString('hex'), expected);
});

t.test('any key, any message: the same signature from both, and it verifies', async () => {
  const key = fc.integer({ min: 0, max: 2 ** 31 - 1 }).map(() => generateKeyPairSync('ed25519').privateKey);
  fc.assert(fc.property(key, fc.uint8Array({ maxLength: 12_000 }), (privateKey, bytes) => {
    const message = Buffer.from(bytes);
    const sodium = (sodiumSigner(privateKey) as (m: Buffer) => Buffer)(message);
    const openssl = opensslSigner(privateKey)(message);
    return sodium.equals(openssl) && verify(null, message, createPublicKey(privateKey), sodium);
  }), { seed: FUZZ_SEED, numRuns: 200 });
});

t.test("the service's signer, short messages and long (OpenSSL's from 12 KiB): OpenSSL's signatures", async (t) => {
  const sign = ed25519Signer(placeholder);
  for (const length of [0, 294, 12 * 1024 - 1, 12 * 1024, 90_000]) {
    const message = Buffer.alloc(length, length % 251);
    t.ok(sign(message).equals(opensslSigner(placeholder)(message)), `${length} bytes`);
  }
});

t.test('a signer signs every call anew: one signature per message, never a buffer reused', async (t) => {
  const sign = ed25519Signer(placeholder);
  const first = sign(Buffer.from('a'));
  const copy = Buffer.from(first);
  sign(Buffer.from('b'));
  t.ok(first.equals(copy), 'the first signature is untouched by the second call');
});

t.test('signers by the tens of thousands (a process that builds one per request) hold no scarce resource', async (t) => {
  // sodium_malloc's guarded pages would exhaust the process's memory mappings near 20,000
  let sign = sodiumSigner(placeholder);
  for (let i = 0; i < 30_000; i++) sign = sodiumSigner(placeholder);
  t.equal(sign?.(Buffer.alloc(0)).length, 64);
});

t.test('ArtefactSigner: a compact JWS that verifies with the published key', async (t) => {
  const signer = new ArtefactSigner(keysFromList(PLACEHOLDER_SIGNING_KEY, 'test'));
  const jws = signer.sign('{"typ":"receipt","n":"ü"}');
  const [header, payload, signature] = jws.split('.') as [string, string, string];
  t.equal(Buffer.from(payload, 'base64url').toString(), '{"typ":"receipt","n":"ü"}');
  t.ok(verify(null, Buffer.from(`${header}.${payload}`), createPublicKey(placeholder), Buffer.from(signature, 'base64url')));
});
