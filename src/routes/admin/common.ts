import { createHash, timingSafeEqual } from 'node:crypto';
import { reply, type Reply } from '../../http/reply.js';
import type { Handler } from '../../http/route.js';
import type { LicenseView } from '../../licenses/changes.js';
import { normaliseDomain } from '../../licenses/origin.js';
import { webhookUrlRefusal, type Refusal, type TargetPolicy } from '../../webhooks/guard.js';
import { coded, quotaPercentage } from '../replies.js';
import { bearer } from '../schemas.js';

// What the admin routes (in /openapi.json) share: the token check, the answers, the view of a license.

//                        status  code                       message
export const adminReplies = {
  UNAUTHORIZED: coded(401, 'UNAUTHORIZED', 'Yönetici yetkisi gerekli'),
  LICENSE_NOT_FOUND: coded(404, 'LICENSE_NOT_FOUND', 'Lisans bulunamadı'),
  LICENSE_EXISTS: coded(409, 'LICENSE_EXISTS', 'Bu lisans anahtarı zaten kayıtlı'),
  IDEMPOTENCY_KEY_REUSED: coded(422, 'IDEMPOTENCY_KEY_REUSED', 'Bu işlem anahtarı başka bir satın alma için kullanıldı'),
  // 400 INVALID_REQUEST: invalid(field, why)
} as const;

/** A webhook URL is never without a secret to sign its requests (README "Webhooks"). */
export const secretRequired = (): Reply => invalid('webhookSecret', 'webhookUrl için gerekli (en az 16 karakter)');

/** Why a webhook URL's target is refused (src/webhooks/guard.ts), in words that say nothing of what is there. */
export const webhookTargetReplies: Record<Refusal, Reply> = {
  insecure: invalid('webhookUrl', 'yalnızca https:// adresleri kabul edilir'),
  internal: invalid('webhookUrl', 'iç ağ adreslerine izin verilmez'),
};

/**
 * The answer refusing a webhook URL the operator's policy does not allow (http://, an
 * internal address or a name that resolves to one), or null: none given, null, or allowed.
 */
export async function webhookTargetRefused(url: string | null | undefined, policy: TargetPolicy): Promise<Reply | null> {
  if (typeof url !== 'string') return null;
  const refusal = await webhookUrlRefusal(url, policy);
  return refusal === null ? null : webhookTargetReplies[refusal];
}

export function invalid(field: string, why = 'geçersiz'): Reply {
  return coded(400, 'INVALID_REQUEST', `${field}: ${why}`);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Wraps a handler so that it runs only for "Authorization: Bearer <ADMIN_TOKEN>" (compared in constant time). */
export function adminGuard(adminToken: string): (handler: Handler) => Handler {
  const expected = digest(adminToken);
  return (handler) => (req) => {
    const token = bearer(req.authorization);
    return token !== null && timingSafeEqual(digest(token), expected) ? handler(req) : adminReplies.UNAUTHORIZED;
  };
}

/** Domains normalised, or the answer naming the first bad entry. */
export function domainsOf(entries: string[] | undefined): string[] | Reply | undefined {
  if (entries === undefined) return undefined;
  const out = new Set<string>();
  for (const entry of entries) {
    const domain = normaliseDomain(entry);
    if (domain === null) return invalid('domains', `"${entry}" bir alan adı değil`);
    out.add(domain);
  }
  return [...out];
}

/** A license as the admin API shows it. */
export function licenseReply(license: LicenseView, status = 200): Reply {
  return reply(status, { success: true, data: licenseData(license) });
}

/** The License object of /openapi.json (never the password or its hash). */
export function licenseData(license: LicenseView): Record<string, unknown> {
  const { totalQuota, usedQuota } = license;
  return {
    licenseKey: license.licenseKey,
    firmaId: license.firmaId,
    organizationName: license.organizationName,
    totalQuota,
    usedQuota,
    remainingQuota: Math.max(0, totalQuota - usedQuota),
    quotaPercentage: quotaPercentage(totalQuota, usedQuota),
    expiryDate: license.expiryDate.toISOString(),
    isActive: license.isActive,
    domains: license.domains,
    webhookUrl: license.webhookUrl,
    // never the secret: only whether one is stored
    webhookSecretSet: license.webhookSecretSet,
  };
}
