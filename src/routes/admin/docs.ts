import { Type, type TSchema } from '@sinclair/typebox';
import type { Reply } from '../../http/reply.js';
import type { LicenseView } from '../../licenses/changes.js';
import { EXAMPLE } from '../../openapi/examples.js';
import { bodyOf, type Case, type ParamDoc, type ResponseDoc } from '../../openapi/routeDoc.js';
import { License, LicenseAnswer } from '../../openapi/schemas.js';
import { LicenseKey } from '../schemas.js';
import { adminReplies, licenseReply } from './common.js';

// What the admin routes' docs (/admin/openapi.json) share: the example license, as licenseReply
// renders it, the key parameter and the 401 every admin route answers.

const exampleView: LicenseView = {
  firmaId: EXAMPLE.firmaId, licenseKey: EXAMPLE.licenseKey, organizationName: EXAMPLE.organizationName, passwordHash: '',
  totalQuota: EXAMPLE.totalQuota, usedQuota: EXAMPLE.usedQuota, expiryDate: new Date(EXAMPLE.expiryDate), isActive: true,
  domains: [...EXAMPLE.domains], version: 1, tokenGeneration: 0,
  webhookUrl: 'https://hooks.ornek.com.tr/imza', webhookSecretSet: true, forfeitedQuota: 0, packagesMade: 1, releasesPerDay: 5, releasedQuota: 0,
  packages: [{
    no: 1, amount: EXAMPLE.totalQuota, used: EXAMPLE.usedQuota, forfeited: 0, expiresAt: new Date(EXAMPLE.expiryDate),
    createdAt: new Date('2025-01-02T09:30:00.000Z'), note: null,
  }],
  rateLimits: { getToken: null, signToken: null, validate: 500, checkQuota: null },
};

/** The example license (with changes) as an admin answer of that status (with `extra` beside its data). */
export function exampleLicense(change: Partial<LicenseView> = {}, status = 200, extra: Parameters<typeof licenseReply>[2] = {}): Reply {
  return licenseReply({ ...exampleView, ...change }, status, extra);
}

/** A success: {success:true, data: License} (another schema: the answer with fields beside data). */
export function licenseAnswer(description: string, summary: string, reply: Reply, schema: TSchema = LicenseAnswer): ResponseDoc {
  return { description, schema, examples: [{ summary, value: bodyOf(reply) }] };
}

const closed = { additionalProperties: false } as const;

/** common.ts Warning: something accepted that the caller may not have meant. */
const Warnings = Type.Array(Type.Object({
  code: Type.Literal('EXPIRY_IN_PAST', { description: 'EXPIRY_IN_PAST: the expiryDate given is not in the future' }),
  field: Type.String({ description: 'the field the warning is about' }),
  message: Type.String({ minLength: 1, description: 'in words, in Turkish, starting with the field' }),
}, closed), {
  minItems: 1,
  description: 'present only when there is something to warn about. EXPIRY_IN_PAST: the license was stored with an expiry date that '
    + 'has passed (legitimate for an import of old licenses), so get-token and validate refuse it until a PATCH extends it',
});

/** Create and PATCH: the license, and warnings about what was accepted as given. */
export const LicenseWithWarnings = Type.Object({ success: Type.Literal(true), data: License, warnings: Type.Optional(Warnings) }, closed);

/** Add quota: the license, and whether this answer is the replay of an earlier purchase with the same Idempotency-Key. */
export const PurchaseAnswer = Type.Object({
  success: Type.Literal(true),
  data: License,
  replayed: Type.Boolean({
    description: 'true: the Idempotency-Key names a purchase credited before; nothing was credited now and data is the license '
      + 'as it is. false: the package was credited by this request',
  }),
}, closed);

export const licenseKeyParam: Record<string, ParamDoc> = {
  licenseKey: { description: 'the license key, a UUID (any case); any other value is 404', schema: LicenseKey },
};

export const unauthorized: Case = ['no Authorization: Bearer <an admin token>, or another token', adminReplies.UNAUTHORIZED];
export const notFound: Case = ['no license has this key', adminReplies.LICENSE_NOT_FOUND];
