import { ServiceUnavailable } from '../errors.js';
import { reply, retryHeaders, retrySeconds, STATUS, type Reply } from '../http/reply.js';

// Every answer of the public API, one table per endpoint, worded as in the spec's Errors
// section so the two can be read side by side. Script result codes (lua/*.lua) index them.

export const RATE_MESSAGE = 'Çok fazla istek. Lütfen bekleyiniz.';

import { ScriptResult } from '../redis/scripts.js';

export { ScriptResult };

function fixed(status: number, body: unknown): Reply {
  return { status: STATUS[status] as string, body: JSON.stringify(body) };
}

// ---- validate: {success:false, message} -------------------------------------------------
//        status  message                                           condition
export const validateReplies = {
  TOKEN_EMPTY: fixed(400, { success: false, message: 'Token boş olamaz' }), //              token empty
  TOKEN_EXPIRED: fixed(401, { success: false, message: 'Token süresi dolmuş' }), //         sign token expired
  TOKEN_INVALID: fixed(401, { success: false, message: 'Geçersiz token' }), //              malformed, bad signature, invalid
  TOKEN_USED: fixed(400, { success: false, message: 'Bu token zaten kullanılmış. Yeni token alınız.' }), // redeemed
  ORIGIN_DENIED: fixed(401, { success: false, message: 'Bu domain için yetki yok' }), //    origin not authorised
  QUOTA_EXHAUSTED: fixed(400, { success: false, message: 'İmza kotası doldu', remainingQuota: 0 }), // quota used up
  // 429 RATE_LIMITED: rateLimited(ms) below
} as const;

export function validateBadRequest(field: string): Reply {
  return reply(400, { success: false, message: `Geçersiz istek: ${field === 'body' ? 'gövde bir JSON nesnesi olmalı' : field}` });
}

export function validateSuccess(used: number, remaining: number): Reply {
  return {
    status: '200 OK',
    body: `{"success":true,"message":"Token doğrulandı, imza kotası düşüldü","usedQuota":${used},"remainingQuota":${remaining}}`,
  };
}

/** 429 of get-token, sign-token and validate: {success:false, message, retryAfter}. */
export function rateLimited(ms: number): Reply {
  const seconds = retrySeconds(ms);
  return reply(429, { success: false, message: RATE_MESSAGE, retryAfter: seconds }, retryHeaders(seconds));
}

// ---- get-token and sign-token: {success:false, error:{code, message}} ------------------
function coded(status: number, code: string, message: string): Reply {
  return fixed(status, { success: false, error: { code, message } });
}
//        status  code                   message
export const issueReplies = {
  INVALID_CREDENTIALS: coded(401, 'INVALID_CREDENTIALS', 'Lisans anahtarı veya şifre hatalı'),
  INSUFFICIENT_QUOTA: coded(400, 'INSUFFICIENT_QUOTA', 'Yetersiz imza kotası'),
  LICENSE_EXPIRED: coded(401, 'LICENSE_EXPIRED', 'Lisans süresi dolmuş'),
  LICENSE_INACTIVE: coded(401, 'LICENSE_INACTIVE', 'Lisans aktif değil'),
  INVALID_TOKEN: coded(401, 'INVALID_TOKEN', 'Geçersiz veya süresi dolmuş erişim tokenı'),
  // 400 INVALID_REQUEST: issueBadRequest(field); 429: rateLimited(ms)
} as const;

export function issueBadRequest(field: string): Reply {
  return coded(400, 'INVALID_REQUEST', `Geçersiz istek parametresi: ${field}`);
}

/** issue.lua refusals, by result code. */
export const issueRefusals: Partial<Record<ScriptResult, Reply>> = {
  [ScriptResult.LICENSE_EXPIRED]: issueReplies.LICENSE_EXPIRED,
  [ScriptResult.LICENSE_INACTIVE]: issueReplies.LICENSE_INACTIVE,
  [ScriptResult.INSUFFICIENT_QUOTA]: issueReplies.INSUFFICIENT_QUOTA,
};

/** redeem.lua refusals, by result code. */
export const redeemRefusals: Partial<Record<ScriptResult, Reply>> = {
  [ScriptResult.TOKEN_USED]: validateReplies.TOKEN_USED,
  [ScriptResult.LICENSE_INVALID]: validateReplies.TOKEN_INVALID, // inactive or expired license (CONTRACT)
  [ScriptResult.ORIGIN_DENIED]: validateReplies.ORIGIN_DENIED,
  [ScriptResult.QUOTA_EXHAUSTED]: validateReplies.QUOTA_EXHAUSTED,
};

/**
 * The reply for a refusal code of a script. A call that reached Redis too late (LATE) did
 * nothing, and its client has been answered already; should one still come back, 503.
 */
export function refusal(table: Partial<Record<ScriptResult, Reply>>, code: ScriptResult): Reply {
  const out = table[code];
  if (out === undefined) throw new ServiceUnavailable(`script result ${code}`);
  return out;
}

// ---- check-quota: {success:false, error:{code, message}, timestamp} ---------------------
//        status  code                   message                       extra
export const quotaErrors = {
  LICENSE_NOT_FOUND: [404, 'Lisans bulunamadı'],
  LICENSE_EXPIRED: [410, 'Lisans süresi dolmuş'], //           data {expiryDate, daysExpired}
  LICENSE_INACTIVE: [403, 'Lisans aktif değil'],
  QUOTA_EXCEEDED: [429, 'İmza kotası doldu'], //                data {remainingQuota 0, totalQuota, usedQuota}
  INVALID_LICENSE_KEY: [400, 'Geçersiz lisans anahtarı formatı (UUID bekleniyor)'],
  RATE_LIMITED: [429, RATE_MESSAGE], //                         retryAfter, Retry-After (not published)
} as const satisfies Record<string, readonly [number, string]>;

export type QuotaError = keyof typeof quotaErrors;
