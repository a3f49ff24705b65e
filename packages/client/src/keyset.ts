import { ArtefactVerificationError } from './errors.js';

// The Ed25519 public keys license tokens and receipts are verified with: a JWKS given by the
// caller, or the service's /.well-known/jwks.json fetched on first use and kept. The service
// publishes a key a restart before it signs with it, so a kid that is not in the set is
// either forged or signed by a key published after the set was fetched: the set is fetched
// again then, at most once per refetchIntervalMs, so that a stream of forged kids costs the
// service one request per interval, not one per token.

export interface KeySetOptions {
  /** the service's address, e.g. https://lisans.example.com.tr: its JWKS is <baseUrl>/.well-known/jwks.json */
  baseUrl: string;
  /** a fetch of your own; default: the global fetch */
  fetch?: typeof fetch;
  /** per fetch, from sending to the whole body read (default 10 000 ms) */
  timeoutMs?: number;
  /** the shortest time between two fetches of the set (default 60 000 ms) */
  refetchIntervalMs?: number;
  /** milliseconds since the epoch, for tests (default Date.now) */
  clock?: () => number;
}

/** Longest JWKS body read: the service's is about 150 bytes a key. */
const MAX_JWKS_LENGTH = 1024 * 1024;

/** An Ed25519 public key: 32 bytes, 43 characters of base64url. */
const X = /^[A-Za-z0-9_-]{43}$/;
const MAX_KID_LENGTH = 512;

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : null;
}

function unavailable(message: string, cause?: unknown): ArtefactVerificationError {
  return new ArtefactVerificationError('JWKS_UNAVAILABLE', message, cause === undefined ? undefined : { cause });
}

/**
 * The verifying keys of a JWKS by kid. A JWK counts when it is an Ed25519 public key (kty
 * OKP, crv Ed25519, x) with a kid, and says nothing against signing with EdDSA (use "sig" or
 * none, alg "EdDSA" or none); others are skipped, as is a kid seen before. No key at all:
 * JWKS_UNAVAILABLE.
 */
export async function importJwks(jwks: unknown): Promise<Map<string, CryptoKey>> {
  const list = record(jwks)?.keys;
  if (!Array.isArray(list)) throw unavailable('the JWKS is not an object with a keys array');
  const keys = new Map<string, CryptoKey>();
  for (const item of list) {
    const jwk = record(item);
    if (jwk === null || jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519') continue;
    if ((jwk.use !== undefined && jwk.use !== 'sig') || (jwk.alg !== undefined && jwk.alg !== 'EdDSA')) continue;
    const { x, kid } = jwk;
    if (typeof x !== 'string' || !X.test(x) || typeof kid !== 'string' || kid === '' || kid.length > MAX_KID_LENGTH || keys.has(kid)) continue;
    try {
      // the members WebCrypto needs and no more: runtimes differ on the alg they accept
      keys.set(kid, await globalThis.crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x }, { name: 'Ed25519' }, false, ['verify']));
    } catch {
      // not a point of the curve: skipped like any other unusable key
    }
  }
  if (keys.size === 0) throw unavailable('the JWKS holds no Ed25519 key');
  return keys;
}

/**
 * The keys artefacts are verified with, kept for the life of the object: make one per
 * service and pass it to every verifyLicenseToken and verifyReceipt ({ keySet }).
 */
export class KeySet {
  private readonly url: string;
  private readonly fetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly refetchIntervalMs: number;
  private readonly clock: () => number;
  private keys: Map<string, CryptoKey> | null = null;
  private fetchedAt: number | null = null;
  private loading: Promise<void> | null = null;

  constructor(options: KeySetOptions) {
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/.well-known/jwks.json`;
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.refetchIntervalMs = Math.max(0, options.refetchIntervalMs ?? 60_000);
    this.clock = options.clock ?? Date.now;
  }

  /**
   * The key of a kid: from the set as fetched, else from the set fetched again when the last
   * fetch is older than refetchIntervalMs. Throws UNKNOWN_KEY, or JWKS_UNAVAILABLE when the
   * fetch this needed failed (a failed fetch counts for the interval too).
   */
  async key(kid: string): Promise<CryptoKey> {
    const known = this.keys?.get(kid);
    if (known) return known;
    const due = this.fetchedAt === null || this.clock() - this.fetchedAt >= this.refetchIntervalMs;
    if (this.loading === null && !due) {
      if (this.keys === null) throw unavailable(`the JWKS could not be fetched; next try ${this.refetchIntervalMs} ms after the last`);
      throw new ArtefactVerificationError('UNKNOWN_KEY', `no key ${kid.slice(0, 64)} in the JWKS`);
    }
    // concurrent callers share one fetch; its failure is each one's
    this.loading ??= this.load().finally(() => {
      this.loading = null;
    });
    await this.loading;
    const key = this.keys?.get(kid);
    if (!key) throw new ArtefactVerificationError('UNKNOWN_KEY', `no key ${kid.slice(0, 64)} in the JWKS, fetched again`);
    return key;
  }

  private async load(): Promise<void> {
    this.fetchedAt = this.clock();
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.timeoutMs);
    let status: number;
    let text: string;
    try {
      const res = await this.fetch(this.url, { headers: { accept: 'application/json' }, signal: abort.signal });
      status = res.status;
      text = await res.text();
    } catch (err) {
      throw unavailable(`GET ${this.url}: no answer (${abort.signal.aborted ? `none within ${this.timeoutMs} ms` : (err as Error)?.message ?? String(err)})`, err);
    } finally {
      clearTimeout(timer);
    }
    if (status !== 200) throw unavailable(`GET ${this.url}: HTTP ${status}`);
    if (text.length > MAX_JWKS_LENGTH) throw unavailable(`GET ${this.url}: longer than ${MAX_JWKS_LENGTH} characters`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw unavailable(`GET ${this.url}: not JSON`);
    }
    this.keys = await importJwks(body);
  }
}
