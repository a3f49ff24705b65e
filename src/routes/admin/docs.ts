import type { Reply } from '../../http/reply.js';
import type { LicenseView } from '../../licenses/changes.js';
import { EXAMPLE } from '../../openapi/examples.js';
import { bodyOf, type Case, type ParamDoc, type ResponseDoc } from '../../openapi/routeDoc.js';
import { LicenseAnswer } from '../../openapi/schemas.js';
import { LicenseKey } from '../schemas.js';
import { adminReplies, licenseReply } from './common.js';

// What the admin routes' docs (/openapi.json) share: the example license, as licenseReply
// renders it, the key parameter and the 401 every admin route answers.

const exampleView: LicenseView = {
  firmaId: EXAMPLE.firmaId, licenseKey: EXAMPLE.licenseKey, organizationName: EXAMPLE.organizationName, passwordHash: '',
  totalQuota: EXAMPLE.totalQuota, usedQuota: EXAMPLE.usedQuota, expiryDate: new Date(EXAMPLE.expiryDate), isActive: true,
  domains: [...EXAMPLE.domains], version: 1, tokenGeneration: 0,
  webhookUrl: 'https://hooks.ornek.com.tr/imza', webhookSecretSet: true,
};

/** The example license (with changes) as an admin answer of that status. */
export function exampleLicense(change: Partial<LicenseView> = {}, status = 200): Reply {
  return licenseReply({ ...exampleView, ...change }, status);
}

/** A success: {success:true, data: License}. */
export function licenseAnswer(description: string, summary: string, reply: Reply): ResponseDoc {
  return { description, schema: LicenseAnswer, examples: [{ summary, value: bodyOf(reply) }] };
}

export const licenseKeyParam: Record<string, ParamDoc> = {
  licenseKey: { description: 'the license key, a UUID (any case); any other value is 404', schema: LicenseKey },
};

export const unauthorized: Case = ['no Authorization: Bearer <ADMIN_TOKEN>, or another token', adminReplies.UNAUTHORIZED];
export const notFound: Case = ['no license has this key', adminReplies.LICENSE_NOT_FOUND];
