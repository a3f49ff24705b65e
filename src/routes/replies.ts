import { reply, retryHeaders, retrySeconds, type Reply, type TransportErrors, type TransportFailure } from '../http/reply.js';
import { SIGNING_KEYS_SETTINGS } from '../tokens/signingKeys.js';

// The answers more than one endpoint gives, worded as published in docs/api.md#errors, so the
// two can be read side by side. Each route's own answers are in its file, in a table by
// outcome (src/redis/outcomes.ts Outcome).

export const RATE_MESSAGE = 'Çok fazla istek. Lütfen bekleyiniz.';

/** 429 of get-token, sign-token and validate: {success:false, message, retryAfter}. */
export function rateLimited(ms: number): Reply {
  const seconds = retrySeconds(ms);
  return reply(429, { success: false, message: RATE_MESSAGE, retryAfter: seconds }, retryHeaders(seconds));
}

/** The share of the quota left, in percent with two decimals (check-quota, admin). */
export function quotaPercentage(total: number, used: number): number {
  if (total <= 0) return 0;
  return Math.round(((total - used) / total) * 10000) / 100;
}

// ---- {success:false, error:{code, message}}: get-token, sign-token, history, admin -----
export function coded(status: number, code: string, message: string): Reply {
  return reply(status, { success: false, error: { code, message } });
}

//        status  code                   message
export const authReplies = {
  INVALID_CREDENTIALS: coded(401, 'INVALID_CREDENTIALS', 'Lisans anahtarı veya şifre hatalı'),
  INSUFFICIENT_QUOTA: coded(400, 'INSUFFICIENT_QUOTA', 'Yetersiz imza kotası'),
  LICENSE_EXPIRED: coded(401, 'LICENSE_EXPIRED', 'Lisans süresi dolmuş'),
  LICENSE_INACTIVE: coded(401, 'LICENSE_INACTIVE', 'Lisans aktif değil'),
  INVALID_TOKEN: coded(401, 'INVALID_TOKEN', 'Geçersiz veya süresi dolmuş erişim tokenı'),
  // 400 INVALID_REQUEST: invalidRequest(field); 429: rateLimited(ms)
} as const;

export function invalidRequest(field: string): Reply {
  return coded(400, 'INVALID_REQUEST', `Geçersiz istek parametresi: ${field}`);
}

// ---- an instance without signing keys (SIGNING_KEYS_FILE, SIGNING_KEYS): what signs answers 503 --
// Chosen when the route is built (src/routes/licenseToken.ts, signature_sign.ts), answered
// before anything is read, counted or spent. SERVICE_UNAVAILABLE, the code clients already
// know for "not now", but without Retry-After: no retry helps until an operator adds the keys
// and restarts, which the message names.
export const SIGNING_KEYS_MISSING_MESSAGE = 'İmzalama anahtarı yapılandırılmamış (SIGNING_KEYS_FILE veya SIGNING_KEYS)';

export const signingKeysMissing = {
  /** license validation's, in get-token's coded shape */
  coded: coded(503, 'SERVICE_UNAVAILABLE', SIGNING_KEYS_MISSING_MESSAGE),
  /** sign's, in validate's shape */
  message: reply(503, { success: false, message: SIGNING_KEYS_MISSING_MESSAGE }),
} as const;

/** When the document says they are answered. */
export const SIGNING_KEYS_MISSING_WHEN = `this instance has no signing keys (${SIGNING_KEYS_SETTINGS} unset), answered before anything `
  + 'is read or counted; no Retry-After: it lasts until the keys are set and the service restarted';

// ---- what the HTTP layer answers by itself, in each endpoint's shape --------------------
//                                                    status  message
const transport: Record<TransportFailure, readonly [number, string]> = {
  NOT_FOUND: [404, 'Kaynak bulunamadı'],
  METHOD_NOT_ALLOWED: [405, 'Bu yöntem desteklenmiyor'],
  PAYLOAD_TOO_LARGE: [413, 'İstek gövdesi çok büyük'],
  SERVICE_UNAVAILABLE: [503, 'Hizmet geçici olarak kullanılamıyor'],
  ORIGIN_NOT_ALLOWED: [403, 'Bu kaynağa bu kökenden (Origin) erişim izni yok'], // a CORS preflight from an origin not in CORS_ORIGINS
};

function rendered(render: (status: number, code: string, message: string) => Reply): TransportErrors {
  const out = new Map<TransportFailure, Reply>();
  for (const [failure, [status, message]] of Object.entries(transport)) out.set(failure as TransportFailure, render(status, failure, message));
  return (failure) => out.get(failure) as Reply;
}

/** {success:false, error:{code, message}}: get-token, sign-token, history, health, admin, unknown paths */
export const codedErrors = rendered(coded);

/** {success:false, message}: validate */
export const messageErrors = rendered((status, _code, message) => reply(status, { success: false, message }));

let stampedAt = -1;
let stampText = '';
/**
 * Now, as an ISO 8601 timestamp (check-quota's answers carry one). The text is made once a
 * millisecond: made per answer it cost ~0.55 µs, 2 % of check-quota's CPU.
 */
export function timestampNow(): string {
  const ms = Date.now();
  if (ms !== stampedAt) {
    stampedAt = ms;
    stampText = new Date(ms).toISOString();
  }
  return stampText;
}

/** {success:false, error:{code, message}, timestamp}: check-quota */
export const timestampedErrors: TransportErrors = (failure) => {
  const [status, message] = transport[failure];
  return reply(status, { success: false, error: { code: failure, message }, timestamp: timestampNow() });
};

/** A {licenseKey} path parameter that is not a UUID (check-quota, history, ledger). */
export const INVALID_LICENSE_KEY = ['INVALID_LICENSE_KEY', 'Geçersiz lisans anahtarı formatı (UUID bekleniyor)'] as const;
