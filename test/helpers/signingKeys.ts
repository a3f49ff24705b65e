import { generateKeyPairSync } from 'node:crypto';

/** A fresh Ed25519 private key as SIGNING_KEYS takes it: the base64 of its PKCS#8 DER. */
export function newSigningKey(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
}

/** The signing key of the test services of this test file (SIGNING_KEYS in testEnv). */
export const TEST_SIGNING_KEY = newSigningKey();
