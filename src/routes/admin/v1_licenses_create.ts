import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { Route } from '../../http/route.js';
import type { Reply } from '../../http/reply.js';
import { EXAMPLE } from '../../openapi/examples.js';
import { bodyOf, errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf } from '../../openapi/schemas.js';
import { DEFAULT_RATE_LIMITS } from '../../licenses/rateLimits.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import {
  canonicalKey, Domains, ExpiryDate, LicenseKey, OrganizationName, Password, Quota, RateLimitsInput, ReleasesPerDay, WebhookSecret, WebhookUrl,
} from '../schemas.js';
import {
  adminReplies, type AdminGuard, domainsOf, expiryWarnings, licenseFields, licenseReply, secretRequired, webhookTargetCases,
} from './common.js';
import { exampleLicense, LicenseWithWarnings, unauthorized } from './docs.js';
import { adminBodyParser, refusalOf } from './parsers.js';

const CreateLicenseBody = Type.Object(
  {
    organizationName: OrganizationName,
    password: Password,
    totalQuota: Quota,
    expiryDate: ExpiryDate,
    isActive: Type.Optional(Type.Boolean()),
    domains: Type.Optional(Domains),
    licenseKey: Type.Optional(LicenseKey),
    webhookUrl: Type.Optional(WebhookUrl),
    webhookSecret: Type.Optional(WebhookSecret),
    releasesPerDay: Type.Optional(ReleasesPerDay),
    rateLimits: Type.Optional(RateLimitsInput),
  },
  { additionalProperties: false },
);

const parse = adminBodyParser(CreateLicenseBody);
/** An expiry date of the examples already past. */
const PAST = '2024-12-31T23:59:59.000Z';
const valid = {
  organizationName: EXAMPLE.organizationName, password: EXAMPLE.password, totalQuota: EXAMPLE.totalQuota, expiryDate: EXAMPLE.expiryDate,
};

const doc: RouteDoc = {
  summary: 'Create a license',
  description: 'The key is the caller\'s (a UUID) or generated. The password is stored hashed and never shown again. An '
    + 'expiryDate already past is accepted (an import of old licenses) with a warning: such a license serves nothing until '
    + 'a PATCH extends it. A refused field is named with what was wrong and what is expected.',
  tags: ['admin'],
  auth: 'admin',
  body: {
    schema: CreateLicenseBody,
    examples: [{
      summary: 'a pharmacy with two authorised domains',
      value: {
        organizationName: EXAMPLE.organizationName, password: EXAMPLE.password, totalQuota: EXAMPLE.totalQuota,
        expiryDate: EXAMPLE.expiryDate, domains: [...EXAMPLE.domains],
      },
    }, {
      summary: 'a hospital allowed 500 validations a minute',
      value: {
        organizationName: EXAMPLE.organizationName, password: EXAMPLE.password, totalQuota: EXAMPLE.totalQuota,
        expiryDate: EXAMPLE.expiryDate, rateLimits: { validate: 500 },
      },
    }],
  },
  responses: {
    201: {
      description: 'created; `warnings` when something was accepted that may not be meant (an expiryDate already past)',
      schema: LicenseWithWarnings,
      examples: [
        { summary: 'a new license', value: bodyOf(exampleLicense({ usedQuota: 0 }, 201)) },
        {
          summary: 'an imported license whose expiry has passed',
          value: bodyOf(exampleLicense({ usedQuota: 0, expiryDate: new Date(PAST) }, 201, { warnings: expiryWarnings(new Date(PAST)) })),
        },
      ],
    },
    ...errorResponses(codedErrorOf, [
      ['a field of the wrong type or out of range: the message names its path, what was wrong and what is expected',
        refusalOf(parse, { ...valid, totalQuota: 'abc' })],
      ['a field missing', refusalOf(parse, { ...valid, password: undefined })],
      ['a field unknown', refusalOf(parse, { ...valid, quota: 10 })],
      ['a rate limit that is no integer 0..1000000000 or null', refusalOf(parse, { ...valid, rateLimits: { validate: -1 } })],
      ['a domain that is no host name', domainsOf(['https://']) as Reply],
      ...webhookTargetCases,
      unauthorized,
      ['the licenseKey given is taken', adminReplies.LICENSE_EXISTS],
    ]),
  },
};

/** POST /admin/v1/licenses: a new license; the key is the caller's or generated. */
export function createLicenseRoute(ctx: RouteContext, guard: AdminGuard): Route {
  return {
    method: 'post', path: '/admin/v1/licenses', errors: codedErrors, needsAuthorization: true, bodyLimit: ctx.config.adminBodyLimitBytes, doc,
    needsClientAddress: true, // the audit log's address
    handler: guard(async (req, caller) => {
      const fields = await licenseFields(parse, req.body, ctx.config.webhooks);
      if ('status' in fields) return fields;
      const { body, domains } = fields;
      const webhookUrl = body.webhookUrl ?? null;
      if (webhookUrl !== null && body.webhookSecret === undefined) return secretRequired();
      const license = await ctx.admin.create({
        licenseKey: canonicalKey(body.licenseKey ?? randomUUID()),
        organizationName: body.organizationName,
        password: body.password,
        totalQuota: body.totalQuota,
        expiryDate: new Date(body.expiryDate),
        isActive: body.isActive ?? true,
        domains: domains ?? [],
        webhookUrl,
        webhookSecret: body.webhookSecret ?? null,
        releasesPerDay: body.releasesPerDay ?? 0,
        rateLimits: { ...DEFAULT_RATE_LIMITS, ...body.rateLimits },
      }, req, { admin: caller.name, address: caller.address, idempotencyKey: null });
      return license === null ? adminReplies.LICENSE_EXISTS : licenseReply(license, 201, { warnings: expiryWarnings(license.expiryDate) });
    }),
  };
}
