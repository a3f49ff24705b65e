import { createHash, timingSafeEqual } from 'node:crypto';
import { reply, type Reply } from '../../http/reply.js';
import type { Handler, Request } from '../../http/route.js';
import type { AdminToken } from '../../config/secrets.js';
import type { LicenseView } from '../../licenses/changes.js';
import { normaliseDomain } from '../../licenses/origin.js';
import { packageFigures } from '../../licenses/licenseRow.js';
import type { Case } from '../../openapi/routeDoc.js';
import { webhookUrlRefusal, type Refusal, type TargetPolicy } from '../../webhooks/guard.js';
import { coded, quotaPercentage } from '../replies.js';
import { bearer } from '../schemas.js';
import type { Checked } from './parsers.js';
import { refusal, shown } from './refusals.js';

// What the admin routes (in /admin/openapi.json) share: the token check, the answers, the view of a license.

//                        status  code                       message
export const adminReplies = {
  UNAUTHORIZED: coded(401, 'UNAUTHORIZED', 'Yönetici yetkisi gerekli'),
  LICENSE_NOT_FOUND: coded(404, 'LICENSE_NOT_FOUND', 'Lisans bulunamadı'),
  LICENSE_EXISTS: coded(409, 'LICENSE_EXISTS', 'Bu lisans anahtarı zaten kayıtlı'),
  IDEMPOTENCY_KEY_REUSED: coded(422, 'IDEMPOTENCY_KEY_REUSED', 'Bu işlem anahtarı başka bir satın alma için kullanıldı'),
  // 400 INVALID_REQUEST: ./refusals.ts (the path, what is wrong, what is expected)
} as const;

/** A webhook URL is never without a secret to sign its requests (docs/api.md "Webhooks"). */
export const secretRequired = (): Reply =>
  refusal('webhookSecret', 'eksik', 'webhookUrl ile birlikte (ya da önceden) verilen 16-256 karakterlik bir metin');

/** Why a webhook URL's target is refused (src/webhooks/guard.ts), in words that say nothing of what is there. */
export const webhookTargetReplies: Record<Refusal, Reply> = {
  insecure: refusal('webhookUrl', 'yalnızca https:// adresleri kabul edilir', 'bir https:// adresi'),
  internal: refusal('webhookUrl', 'iç ağ adreslerine izin verilmez', 'internetteki bir sunucunun adresi'),
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

/** webhookTargetRefused's answers, as a route that sets a webhook URL documents them. */
export const webhookTargetCases: readonly Case[] = [
  ['a webhookUrl with http:// (unless WEBHOOK_ALLOW_HTTP=1)', webhookTargetReplies.insecure],
  ['a webhookUrl whose host is, or resolves to, an internal address (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=1)', webhookTargetReplies.internal],
];

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Who calls an admin route: the admin's name (ADMIN_TOKENS) and the client's address (for routes that ask for it, else ""). */
export interface AdminCaller {
  name: string;
  address: string;
}

/** A handler of an admin route, told which admin called. */
export type AdminHandler = (req: Request, caller: AdminCaller) => Reply | Promise<Reply>;
export type AdminGuard = (handler: AdminHandler) => Handler;

/**
 * Wraps a handler so that it runs only for "Authorization: Bearer <one of the admin
 * tokens>", and tells it which admin that is. The token sent is compared, in constant time,
 * with every admin's token, whichever matched, so the time taken says nothing of which one
 * did (or of how many there are before it).
 */
export function adminGuard(admins: readonly AdminToken[]): AdminGuard {
  const expected = admins.map((a) => ({ name: a.name, digest: digest(a.token) }));
  return (handler) => (req) => {
    const token = bearer(req.authorization);
    if (token === null) return adminReplies.UNAUTHORIZED;
    const sent = digest(token);
    let name: string | null = null;
    for (const admin of expected) {
      // no early exit: every token is compared
      if (timingSafeEqual(sent, admin.digest) && name === null) name = admin.name;
    }
    return name === null ? adminReplies.UNAUTHORIZED : handler(req, { name, address: req.clientAddress });
  };
}

/** What a domain entry must be (src/licenses/origin.ts normaliseDomain). */
export const DOMAIN_EXPECTED = 'bir alan adı (ör. ornek.com.tr ya da alt alan adları için *.ornek.com.tr)';

/** Domains normalised, or the answer naming the first bad entry. */
export function domainsOf(entries: string[] | undefined): string[] | Reply | undefined {
  if (entries === undefined) return undefined;
  const out = new Set<string>();
  for (const [i, entry] of entries.entries()) {
    const domain = normaliseDomain(entry);
    if (domain === null) return refusal(`domains[${i}]`, `${shown(entry)} bir alan adı değil`, DOMAIN_EXPECTED);
    out.add(domain);
  }
  return [...out];
}

/**
 * A license's fields as POST and PATCH take them: the body, its domains normalised
 * (undefined: none given) and its webhook URL's target allowed; or the first refusal, in
 * that order.
 */
export async function licenseFields<B extends { domains?: string[]; webhookUrl?: string | null }>(
  parse: (body: Buffer | null) => Checked<B>, raw: Buffer | null, policy: TargetPolicy,
): Promise<{ body: B; domains: string[] | undefined } | Reply> {
  const parsed = parse(raw);
  if (!parsed.ok) return parsed.reply;
  const body = parsed.value;
  const domains = domainsOf(body.domains);
  if (domains && !Array.isArray(domains)) return domains;
  return (await webhookTargetRefused(body.webhookUrl, policy)) ?? { body, domains };
}

/**
 * Something accepted that the caller may not have meant, beside the answer's data (the
 * answer's `warnings`): the field, a code for programs, a sentence for people.
 */
export interface Warning {
  code: 'EXPIRY_IN_PAST';
  field: string;
  message: string;
}

/** The warning of an expiry date already past: such a license is stored (an import of old licenses) but serves nothing. */
export function expiryWarnings(expiryDate: Date | undefined, now = Date.now()): Warning[] {
  if (expiryDate === undefined || expiryDate.getTime() > now) return [];
  return [{
    code: 'EXPIRY_IN_PAST',
    field: 'expiryDate',
    message: `expiryDate: ${expiryDate.toISOString()} geçmişte; lisans kaydedildi ancak süresi dolmuş: get-token ve validate reddeder`,
  }];
}

/** A license as the admin API shows it; `extra` (warnings, replayed) beside its data. */
export function licenseReply(license: LicenseView, status = 200, extra: { warnings?: Warning[]; replayed?: boolean } = {}): Reply {
  const warnings = extra.warnings !== undefined && extra.warnings.length > 0 ? { warnings: extra.warnings } : {};
  const replayed = extra.replayed === undefined ? {} : { replayed: extra.replayed };
  return reply(status, { success: true, data: licenseData(license), ...replayed, ...warnings });
}

/** The License object of /admin/openapi.json (never the password or its hash). */
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
    releasesPerDay: license.releasesPerDay,
    packages: license.packages.map((p) => ({ ...packageFigures(p), note: p.note })),
    rateLimits: {
      getToken: license.rateLimits.getToken, signToken: license.rateLimits.signToken, validate: license.rateLimits.validate,
      checkQuota: license.rateLimits.checkQuota,
    },
  };
}
