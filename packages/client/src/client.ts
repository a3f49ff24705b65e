import { apiErrorOf, LicenseApiError, LicenseNetworkError, LicenseSdkError, LicenseTimeoutError } from './errors.js';
import type {
  CheckQuotaAnswer, GetTokenRequest, HistoryItem, HistoryOptions, HistoryPage, JsonWebKeySet, LedgerOptions, LedgerPage, LicenseTokenAnswer,
  LicenseValidationRequest, ReleaseAnswer, ReleaseOptions, ReleaseRequest, SignAnswer, SignOptions, SignRequest, SignTokenAnswer, SignTokenRequest,
  TokenPair, ValidateAnswer, ValidateOptions, ValidateRequest,
} from './types.js';

// The typed client of the public API. Runtime-agnostic on purpose: global fetch, AbortController
// and setTimeout only, nothing of Node's, so the same module runs in Node 20 and in a browser.

export interface RetryOptions {
  /** attempts in all, the first included (default 3: two retries); 1 turns retries off */
  maxAttempts?: number;
  /** the longest wait before a retry (default 10 000 ms); a Retry-After longer than this is not waited for */
  maxDelayMs?: number;
  /** told before each wait, e.g. for a log line */
  onRetry?: (info: RetryInfo) => void;
}

export interface RetryInfo {
  /** the attempt that failed, 1 for the first */
  attempt: number;
  /** what the SDK waits before the next one */
  delayMs: number;
  error: LicenseApiError | LicenseNetworkError;
}

export interface LicenseClientOptions {
  /** the service's address, e.g. https://lisans.example.com.tr (a path prefix is kept) */
  baseUrl: string;
  /** a fetch of your own (a test's counter, a polyfill); default: the global fetch */
  fetch?: typeof fetch;
  /** per attempt, from sending to the whole body read (default 30 000 ms) */
  timeoutMs?: number;
  retry?: RetryOptions;
}

/**
 * What may be sent again: 'refused' only after an answer that says the service did nothing
 * (429), 'any' after any failure that may pass (429, 503, no answer, timeout).
 */
type Replay = 'refused' | 'any';

interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  replay: Replay;
  /** whether a 2xx body is the answer; default: it says success true (the JWKS says nothing of the kind) */
  answers?: (body: unknown) => boolean;
}

/** Backoff after no answer, doubled each attempt (capped by maxDelayMs). */
const NETWORK_BACKOFF_MS = 250;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function bearer(accessToken: string): Record<string, string> {
  return { authorization: `Bearer ${accessToken}` };
}

/** The query of a paged list (history, the ledger): "?limit=..&cursor=..", or "" when neither is given. */
function pageSearch(options: { limit?: number; cursor?: string }): string {
  const query = new URLSearchParams();
  if (options.limit !== undefined) query.set('limit', String(options.limit));
  if (options.cursor !== undefined) query.set('cursor', options.cursor);
  return query.toString() === '' ? '' : `?${query.toString()}`;
}

function successful(body: unknown): boolean {
  return (body as { success?: unknown } | undefined)?.success === true;
}

function isKeySet(body: unknown): boolean {
  return typeof body === 'object' && body !== null && Array.isArray((body as { keys?: unknown }).keys);
}

/**
 * The Idempotency-Key header of a redemption (validate, sign) or a release, and what may be
 * sent again: without a key only after a 429, which says nothing was done (after any other
 * failure the token may have been redeemed, or its unit given back), with one anything (the
 * service answers the first 200 again).
 */
function idempotencyOf(options: ValidateOptions): Pick<Call, 'headers' | 'replay'> {
  const key = options.idempotencyKey;
  return key === undefined ? { headers: undefined, replay: 'refused' } : { headers: { 'idempotency-key': key }, replay: 'any' };
}

/**
 * The public API of the license service, one method per endpoint. Every method resolves to
 * the answer's body as the service sent it, or throws a LicenseApiError (the service said
 * no), a LicenseNetworkError or a LicenseTimeoutError (no answer).
 *
 * Retries (RetryOptions): a 429 or 503 that carries Retry-After is sent again after that many
 * seconds, unless that is longer than maxDelayMs; no answer or a timeout is sent again after a
 * short backoff; up to maxAttempts in all. validate, sign and release without an idempotency
 * key are retried only after a 429: any other failure may have come after the token was
 * redeemed (or released), and the same request again would answer "already used" ("already
 * released") for one that happened. With a key, every retry is safe (the service answers the
 * first 200 again).
 */
export class LicenseClient {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly maxDelayMs: number;
  private readonly onRetry: ((info: RetryInfo) => void) | undefined;

  constructor(options: LicenseClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxAttempts = Math.max(1, Math.floor(options.retry?.maxAttempts ?? 3));
    this.maxDelayMs = Math.max(0, options.retry?.maxDelayMs ?? 10_000);
    this.onRetry = options.retry?.onRetry;
  }

  /** POST /api/v1/auth/get-token: an access token and a first sign token. */
  getToken(request: GetTokenRequest): Promise<TokenPair> {
    const { licenseKey, password, imzaTipi } = request;
    return this.send({ method: 'POST', path: '/api/v1/auth/get-token', body: { licenseKey, password, imzaTipi }, replay: 'any' });
  }

  /**
   * POST /api/License/validate with a license key and password: license validation, the login
   * of get-token answered with a license token (verifyLicenseToken checks it offline). Spends
   * no quota; sent again as get-token is, since a repeat only issues another token.
   */
  validateLicense(request: LicenseValidationRequest): Promise<LicenseTokenAnswer> {
    // these two members only: at this path a body with a token is a redemption
    const { licenseKey, password } = request;
    return this.send({ method: 'POST', path: '/api/License/validate', body: { licenseKey, password }, replay: 'any' });
  }

  /** POST /api/v1/auth/sign-token: one more sign token for the access token's license, no password. */
  signToken(accessToken: string, request: SignTokenRequest): Promise<SignTokenAnswer> {
    return this.send({
      method: 'POST', path: '/api/v1/auth/sign-token', body: { imzaTipi: request.imzaTipi }, headers: bearer(accessToken), replay: 'any',
    });
  }

  /** POST /api/license/validate: redeems the sign token, spending one unit of quota. */
  validate(request: ValidateRequest, options: ValidateOptions = {}): Promise<ValidateAnswer> {
    const body = request.origin === undefined ? { token: request.token } : { token: request.token, origin: request.origin };
    return this.send({ method: 'POST', path: '/api/license/validate', body, ...idempotencyOf(options) });
  }

  /**
   * POST /api/Signature/sign: redeems the sign token as validate does, spending one unit of
   * quota, and answers a receipt of the documents (verifyReceipt checks it offline).
   */
  sign(request: SignRequest, options: SignOptions = {}): Promise<SignAnswer> {
    const { token, origin } = request;
    // name and sha256 only: the service refuses a document with any other member
    const documents = request.documents.map(({ name, sha256 }) => ({ name, sha256 }));
    const body = origin === undefined ? { token, documents } : { token, origin, documents };
    return this.send({ method: 'POST', path: '/api/Signature/sign', body, ...idempotencyOf(options) });
  }

  /**
   * POST /api/license/release: the signing failed after the redemption (card pulled, wrong
   * PIN), so the redeemed token's unit goes back to its package; within the release window,
   * once per token, within the license's releasesPerDay. Sent again as validate is.
   */
  release(request: ReleaseRequest, options: ReleaseOptions = {}): Promise<ReleaseAnswer> {
    const body = request.reason === undefined ? { token: request.token } : { token: request.token, reason: request.reason };
    return this.send({ method: 'POST', path: '/api/license/release', body, ...idempotencyOf(options) });
  }

  /** GET /api/License/check-quota/{licenseKey}: the license's quota, public. */
  checkQuota(licenseKey: string): Promise<CheckQuotaAnswer> {
    return this.send({ method: 'GET', path: `/api/License/check-quota/${encodeURIComponent(licenseKey)}`, replay: 'any' });
  }

  /** GET /api/License/history/{licenseKey}: one page of the license's redemptions, newest first. */
  async historyPage(licenseKey: string, accessToken: string, options: HistoryOptions = {}): Promise<HistoryPage> {
    const answer = await this.send<{ success: true; data: HistoryPage }>({
      method: 'GET', path: `/api/License/history/${encodeURIComponent(licenseKey)}${pageSearch(options)}`, headers: bearer(accessToken), replay: 'any',
    });
    return answer.data;
  }

  /** Every page of history, newest first, each fetched when the previous one is consumed. */
  async *historyPages(licenseKey: string, accessToken: string, options: HistoryOptions = {}): AsyncGenerator<HistoryPage, void, undefined> {
    let cursor = options.cursor;
    do {
      const page = await this.historyPage(licenseKey, accessToken, { limit: options.limit, cursor });
      yield page;
      if (page.nextCursor !== null && page.nextCursor === cursor) throw this.unexpected('history repeated its cursor');
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** Every redemption of the license, newest first, following nextCursor page by page. */
  async *history(licenseKey: string, accessToken: string, options: HistoryOptions = {}): AsyncGenerator<HistoryItem, void, undefined> {
    for await (const page of this.historyPages(licenseKey, accessToken, options)) yield* page.items;
  }

  /**
   * GET /api/License/ledger/{licenseKey}: the license's packages with their expiry, one page of
   * its ledger's entries (purchases, forfeits, releases, corrections), newest first, and the
   * totals. Shares history's rate limit.
   */
  async ledger(licenseKey: string, accessToken: string, options: LedgerOptions = {}): Promise<LedgerPage> {
    const answer = await this.send<{ success: true; data: LedgerPage }>({
      method: 'GET', path: `/api/License/ledger/${encodeURIComponent(licenseKey)}${pageSearch(options)}`, headers: bearer(accessToken), replay: 'any',
    });
    return answer.data;
  }

  /**
   * GET /.well-known/jwks.json: the public keys license tokens and receipts are signed with,
   * e.g. to ship with an application that verifies offline ({ jwks }); a KeySet fetches it by
   * itself. Empty on a service without signing keys.
   */
  jwks(): Promise<JsonWebKeySet> {
    return this.send({ method: 'GET', path: '/.well-known/jwks.json', replay: 'any', answers: isKeySet });
  }

  // ---- one call: attempts, waits ----------------------------------------------------------

  private async send<T>(call: Call): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt<T>(call);
      } catch (err) {
        const delayMs = attempt < this.maxAttempts ? this.retryDelay(err, call, attempt) : null;
        if (delayMs === null) throw err;
        this.onRetry?.({ attempt, delayMs, error: err as LicenseApiError | LicenseNetworkError });
        await sleep(delayMs);
      }
    }
  }

  /** The wait before the next attempt, or null when the failure is not retried. */
  private retryDelay(err: unknown, call: Call, attempt: number): number | null {
    if (err instanceof LicenseApiError) {
      if (err.retryAfter === undefined || (err.status !== 429 && err.status !== 503)) return null;
      if (err.status === 503 && call.replay !== 'any') return null;
      const ms = err.retryAfter * 1000;
      return ms <= this.maxDelayMs ? ms : null;
    }
    if (err instanceof LicenseNetworkError && call.replay === 'any') {
      return Math.min(this.maxDelayMs, NETWORK_BACKOFF_MS * 2 ** (attempt - 1));
    }
    return null;
  }

  /** The request's headers; a value fetch cannot send (an access token or key with "€" in it) is the caller's error, not the network's. */
  private headersOf(call: Call): Headers {
    try {
      return new Headers({ accept: 'application/json', ...(call.body === undefined ? {} : { 'content-type': 'application/json' }), ...call.headers });
    } catch (err) {
      throw new LicenseSdkError(`${call.method} ${call.path.split('?')[0]}: a header value that cannot be sent (${(err as Error)?.message ?? String(err)})`);
    }
  }

  private async attempt<T>(call: Call): Promise<T> {
    const headers = this.headersOf(call);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.timeoutMs);
    let status: number;
    let retryAfter: string | null;
    let text: string;
    try {
      const res = await this.fetch(this.baseUrl + call.path, {
        method: call.method,
        headers,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        signal: abort.signal,
      });
      status = res.status;
      retryAfter = res.headers.get('retry-after');
      text = await res.text();
    } catch (err) {
      if (abort.signal.aborted) throw new LicenseTimeoutError(this.timeoutMs);
      throw new LicenseNetworkError(`${call.method} ${call.path.split('?')[0]}: no answer (${(err as Error)?.message ?? String(err)})`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
    const body = parse(text);
    if (status >= 200 && status < 300 && (call.answers ?? successful)(body)) return body as T;
    throw apiErrorOf(status, retryAfter, text, body);
  }

  private unexpected(message: string): LicenseApiError {
    return new LicenseApiError(200, 'UNEXPECTED_RESPONSE', message, undefined, undefined);
  }
}
