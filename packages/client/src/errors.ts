// What a LicenseClient call throws. Three kinds a caller tells apart: the service answered
// with an error (LicenseApiError: status, a stable code, the message exactly as published),
// no answer came (LicenseNetworkError; LicenseTimeoutError when the SDK gave up waiting),
// a desktop hand-off payload that does not decode (HandoffError, ./handoff.ts), and a license
// token or receipt that does not verify offline (ArtefactVerificationError, ./verify.ts).

/** The published codes of get-token, license validation, sign-token, history and check-quota, as the service sends them. */
export type CodedErrorCode =
  | 'INVALID_REQUEST' | 'INVALID_CREDENTIALS' | 'INSUFFICIENT_QUOTA' | 'LICENSE_EXPIRED' | 'LICENSE_INACTIVE'
  | 'INVALID_TOKEN' | 'FORBIDDEN' | 'LICENSE_NOT_FOUND' | 'QUOTA_EXCEEDED' | 'INVALID_LICENSE_KEY'
  | 'NOT_FOUND' | 'METHOD_NOT_ALLOWED' | 'PAYLOAD_TOO_LARGE' | 'SERVICE_UNAVAILABLE' | 'ORIGIN_NOT_ALLOWED';

/**
 * validate, sign and release publish no codes, only a Turkish message: the SDK names each
 * message with a stable code (VALIDATE_MESSAGES). Their 400 for a malformed body or
 * Idempotency-Key is INVALID_REQUEST, their transport failures carry the codes of the other endpoints.
 */
export type ValidateErrorCode =
  | 'TOKEN_EMPTY' | 'TOKEN_EXPIRED' | 'TOKEN_INVALID' | 'TOKEN_ALREADY_USED' | 'ORIGIN_NOT_AUTHORIZED'
  | 'QUOTA_EXHAUSTED' | 'IDEMPOTENCY_KEY_REUSED' | ReleaseErrorCode;

/**
 * release's own refusals (its others are validate's): never redeemed, released before, past
 * the release window, its package expired, releases off for the license (releasesPerDay 0),
 * the day's releases used (429 until the next UTC day).
 */
export type ReleaseErrorCode =
  | 'TOKEN_NOT_REDEEMED' | 'TOKEN_ALREADY_RELEASED' | 'RELEASE_WINDOW_PASSED' | 'PACKAGE_EXPIRED' | 'RELEASES_OFF'
  | 'RELEASE_ALLOWANCE_USED';

/**
 * RATE_LIMITED: a rate limit's 429 with Retry-After (get-token, license validation, sign-token,
 * validate, sign, release and history send no code, check-quota sends this one; release's 429
 * for the day's releases used is RELEASE_ALLOWANCE_USED). UNEXPECTED_RESPONSE: an answer
 * in no published shape (a proxy's HTML page, a code this SDK does not know: the body is kept
 * in `body`).
 */
export type LicenseErrorCode = CodedErrorCode | ValidateErrorCode | 'RATE_LIMITED' | 'UNEXPECTED_RESPONSE';

/** validate's published messages (sign's too), release's, and the code the SDK gives each (/openapi.json). */
export const VALIDATE_MESSAGES: Readonly<Record<string, LicenseErrorCode>> = {
  'Token boş olamaz': 'TOKEN_EMPTY',
  'Token süresi dolmuş': 'TOKEN_EXPIRED',
  'Geçersiz token': 'TOKEN_INVALID',
  'Bu token zaten kullanılmış. Yeni token alınız.': 'TOKEN_ALREADY_USED',
  'Bu domain için yetki yok': 'ORIGIN_NOT_AUTHORIZED',
  'İmza kotası doldu': 'QUOTA_EXHAUSTED',
  'Çok fazla istek. Lütfen bekleyiniz.': 'RATE_LIMITED',
  'Bu işlem anahtarı başka bir token için kullanıldı.': 'IDEMPOTENCY_KEY_REUSED',
  // release's own
  'Bu token kullanılmamış; iade edilecek imza yok': 'TOKEN_NOT_REDEEMED',
  'Bu token zaten iade edilmiş': 'TOKEN_ALREADY_RELEASED',
  'İade süresi geçmiş': 'RELEASE_WINDOW_PASSED',
  'İmzanın düştüğü paketin süresi dolmuş; iade edilemez': 'PACKAGE_EXPIRED',
  'Bu lisans için iade kapalı': 'RELEASES_OFF',
  'Bu lisansın bugünkü iade hakkı doldu': 'RELEASE_ALLOWANCE_USED',
  // what the HTTP layer answers by itself in validate's shape
  'Kaynak bulunamadı': 'NOT_FOUND',
  'Bu yöntem desteklenmiyor': 'METHOD_NOT_ALLOWED',
  'İstek gövdesi çok büyük': 'PAYLOAD_TOO_LARGE',
  'Hizmet geçici olarak kullanılamıyor': 'SERVICE_UNAVAILABLE',
  'Bu kaynağa bu kökenden (Origin) erişim izni yok': 'ORIGIN_NOT_ALLOWED',
  // sign on an instance without signing keys: no Retry-After, so never retried (license validation sends the code itself)
  'İmzalama anahtarı yapılandırılmamış (SIGNING_KEYS_FILE veya SIGNING_KEYS)': 'SERVICE_UNAVAILABLE',
};

/** validate's and sign's 400 for a body or header they cannot read: "Geçersiz istek: <what>". */
const VALIDATE_BAD_REQUEST = 'Geçersiz istek: ';

const KNOWN_CODES: ReadonlySet<string> = new Set<CodedErrorCode | 'RATE_LIMITED'>([
  'INVALID_REQUEST', 'INVALID_CREDENTIALS', 'INSUFFICIENT_QUOTA', 'LICENSE_EXPIRED', 'LICENSE_INACTIVE',
  'INVALID_TOKEN', 'FORBIDDEN', 'LICENSE_NOT_FOUND', 'QUOTA_EXCEEDED', 'INVALID_LICENSE_KEY', 'NOT_FOUND',
  'METHOD_NOT_ALLOWED', 'PAYLOAD_TOO_LARGE', 'SERVICE_UNAVAILABLE', 'ORIGIN_NOT_ALLOWED', 'RATE_LIMITED',
]);

/** Every error this SDK throws. */
export class LicenseSdkError extends Error {
  override name = 'LicenseSdkError';
}

/** The service answered with an error. */
export class LicenseApiError extends LicenseSdkError {
  override name = 'LicenseApiError';

  constructor(
    /** the HTTP status */
    readonly status: number,
    /** the published code, or the SDK's code for validate's or sign's message (VALIDATE_MESSAGES) */
    readonly code: LicenseErrorCode,
    /** the message exactly as the service sent it */
    message: string,
    /** seconds, from Retry-After (or the body's retryAfter); undefined when neither was sent */
    readonly retryAfter: number | undefined,
    /** the parsed body (the text when it was not JSON): check-quota's `data`, validate's `remainingQuota` */
    readonly body: unknown,
  ) {
    super(message);
  }
}

/** No answer: the connection failed or broke. The request may or may not have reached the service. */
export class LicenseNetworkError extends LicenseSdkError {
  override name = 'LicenseNetworkError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** No answer within timeoutMs: the SDK aborted the request. It may have reached the service. */
export class LicenseTimeoutError extends LicenseNetworkError {
  override name = 'LicenseTimeoutError';

  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : null;
}

/** a Map, so that a message such as "constructor" finds nothing of Object.prototype */
const codesOfMessages = new Map(Object.entries(VALIDATE_MESSAGES));

function codeOfMessage(message: string): LicenseErrorCode {
  return codesOfMessages.get(message) ?? (message.startsWith(VALIDATE_BAD_REQUEST) ? 'INVALID_REQUEST' : 'UNEXPECTED_RESPONSE');
}

/** Whole seconds from a Retry-After header (delta-seconds), else from the body's retryAfter. */
function retryAfterOf(header: string | null, body: Record<string, unknown> | null): number | undefined {
  if (header !== null && /^\s*\d+\s*$/.test(header)) return Number(header);
  const field = body?.retryAfter;
  return typeof field === 'number' && Number.isFinite(field) && field >= 0 ? field : undefined;
}

/** The error an answer stands for. `parsed` is the JSON body, or undefined when it was not JSON. */
export function apiErrorOf(status: number, retryAfterHeader: string | null, text: string, parsed: unknown): LicenseApiError {
  const body = record(parsed);
  const retryAfter = retryAfterOf(retryAfterHeader, body);
  const error = record(body?.error);
  if (error !== null && typeof error.code === 'string' && typeof error.message === 'string') {
    // {success:false, error:{code, message}} (and check-quota's timestamp, data)
    const code = KNOWN_CODES.has(error.code) ? error.code as LicenseErrorCode : 'UNEXPECTED_RESPONSE';
    return new LicenseApiError(status, code, error.message, retryAfter, body);
  }
  if (body !== null && typeof body.message === 'string') {
    // {success:false, message}: validate, sign and release, and the 429 of get-token, license validation and sign-token
    return new LicenseApiError(status, codeOfMessage(body.message), body.message, retryAfter, body);
  }
  return new LicenseApiError(status, 'UNEXPECTED_RESPONSE', `HTTP ${status}: an answer in no published shape`, retryAfter, parsed ?? text);
}

/**
 * Why a license token or receipt was refused (./verify.ts). MALFORMED: not a compact JWS
 * (three base64url segments without padding, JSON objects without a repeated member);
 * UNSUPPORTED_HEADER: anything but {alg: "EdDSA", typ: "JWT", kid} (none, HS256, RS256, jku,
 * jwk, x5u, crit...); UNKNOWN_KEY: a kid not in the key set, after the one refetch allowed;
 * BAD_SIGNATURE; WRONG_ARTEFACT: a receipt where a license token was expected or the reverse
 * (any other typ too); WRONG_ISSUER; INVALID_CLAIMS: signed, but a member is missing or not
 * of the format's type; EXPIRED and INACTIVE: license tokens only; JWKS_UNAVAILABLE: the key
 * set could not be fetched, or holds no Ed25519 key.
 */
export type ArtefactProblem =
  | 'MALFORMED' | 'UNSUPPORTED_HEADER' | 'UNKNOWN_KEY' | 'BAD_SIGNATURE' | 'WRONG_ARTEFACT' | 'WRONG_ISSUER'
  | 'INVALID_CLAIMS' | 'EXPIRED' | 'INACTIVE' | 'JWKS_UNAVAILABLE';

/** A license token or receipt that does not verify: nothing of it may be trusted. */
export class ArtefactVerificationError extends LicenseSdkError {
  override name = 'ArtefactVerificationError';

  constructor(readonly reason: ArtefactProblem, message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
