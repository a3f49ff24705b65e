import { sign, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';

// One Ed25519 signature per license token and per receipt, on the request path. libsodium
// (sodium-native) signs in about half the CPU time of OpenSSL's Ed25519 (node:crypto), and
// Ed25519 signatures are deterministic (RFC 8032): both give the very same bytes for a key
// and a message, so which one signs changes nothing a verifier can see. node:crypto stays
// what reads the keys and publishes the JWKS, and signs where the addon cannot be loaded.

/** Signs one message with one Ed25519 private key: the 64-byte signature. */
export type Ed25519Sign = (message: Buffer) => Buffer;

/** Which library signs: 'libsodium' (sodium-native), or 'openssl' (node:crypto) where the addon cannot be loaded. */
export type Ed25519Library = 'libsodium' | 'openssl';

interface Sodium {
  crypto_sign_seed_keypair(publicKey: Buffer, secretKey: Buffer, seed: Buffer): void;
  crypto_sign_detached(signature: Buffer, message: Buffer, secretKey: Buffer): void;
}

/** sodium-native, or null when its addon cannot be loaded here (no prebuilt binary for the platform). */
function loadSodium(): Sodium | null {
  try {
    return createRequire(import.meta.url)('sodium-native') as Sodium;
  } catch {
    return null;
  }
}

const sodium = loadSodium();

/** The library that signs in this process. */
export const ED25519_LIBRARY: Ed25519Library = sodium === null ? 'openssl' : 'libsodium';

/** The warning at start where the addon cannot be loaded (src/cli/server.ts). */
export const ED25519_FALLBACK_WARNING = 'sodium-native cannot be loaded here: license tokens and receipts are signed with '
  + "OpenSSL's Ed25519 (node:crypto), the same signatures at about twice the CPU time (npm ci installs it with its prebuilt binaries)";

/** OpenSSL's signer of `key` (node:crypto). */
export function opensslSigner(key: KeyObject): Ed25519Sign {
  return (message) => sign(null, message, key);
}

/** libsodium's signer of `key`, or null where sodium-native cannot be loaded. */
export function sodiumSigner(key: KeyObject): Ed25519Sign | null {
  if (sodium === null) return null;
  const s = sodium;
  // the JWK's d is the key's 32-byte seed (RFC 8037); libsodium's secret key is seed and public key
  const seed = Buffer.from((key.export({ format: 'jwk' }) as { d: string }).d, 'base64url');
  // a plain buffer, not sodium_malloc's guarded pages: those cost memory mappings of their own
  // (20,000 of them exhaust a process's), and the KeyObject holds the key in memory anyway
  const secretKey = Buffer.alloc(64);
  s.crypto_sign_seed_keypair(Buffer.alloc(32), secretKey, seed);
  seed.fill(0);
  return (message) => {
    const signature = Buffer.allocUnsafe(64);
    s.crypto_sign_detached(signature, message, secretKey);
    return signature;
  };
}

/**
 * Messages from this size on go to OpenSSL: libsodium's portable SHA-512 (Ed25519 hashes the
 * message twice) falls behind OpenSSL's assembly on long ones. Measured here, µs a signature,
 * libsodium against OpenSSL: 300 B 21 against 40, 8 KB 46 against 56, 12 KB 61 against 64,
 * 20 KB 120 against 99 (a receipt's signing input, under sign's 64 KiB body, reaches about 90 KB).
 */
const SODIUM_BELOW_BYTES = 12 * 1024;

/** The fastest signer of `key` this process has, for each message's length. */
export function ed25519Signer(key: KeyObject): Ed25519Sign {
  const sodium = sodiumSigner(key);
  const openssl = opensslSigner(key);
  return sodium === null ? openssl : (message) => (message.length < SODIUM_BELOW_BYTES ? sodium(message) : openssl(message));
}
