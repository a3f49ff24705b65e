import { Type } from '@sinclair/typebox';
import type { Route } from '../../http/route.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import { Domains, ExpiryDate, licenseKeyParam, OrganizationName, Password, RateLimitsInput, ReleasesPerDay, WebhookSecret, WebhookUrl } from '../schemas.js';
import {
  adminReplies, type AdminGuard, expiryWarnings, licenseFields, licenseReply, secretRequired, webhookTargetCases,
} from './common.js';
import { exampleLicense, licenseAnswer, LicenseWithWarnings, licenseKeyParam as keyParam, notFound, unauthorized } from './docs.js';
import { adminBodyParser, refusalOf } from './parsers.js';

const PatchLicenseBody = Type.Object(
  {
    organizationName: Type.Optional(OrganizationName),
    password: Type.Optional(Password),
    expiryDate: Type.Optional(ExpiryDate),
    isActive: Type.Optional(Type.Boolean()),
    domains: Type.Optional(Domains),
    webhookUrl: Type.Optional(WebhookUrl),
    webhookSecret: Type.Optional(WebhookSecret),
    releasesPerDay: Type.Optional(ReleasesPerDay),
    rateLimits: Type.Optional(RateLimitsInput),
  },
  { additionalProperties: false, minProperties: 1 },
);

const parse = adminBodyParser(PatchLicenseBody);

const doc: RouteDoc = {
  summary: 'Change a license (anything but its quota)',
  description: 'A password change or a deactivation revokes the license\'s access tokens. A rate limit given in rateLimits ' +
    'takes its value (null: back to the deployment\'s); one not given keeps its own. In force for the very next public ' +
    'request, on every instance. An expiryDate already past is accepted with a warning (the license then serves nothing).',
  tags: ['admin'],
  auth: 'admin',
  params: keyParam,
  body: {
    schema: PatchLicenseBody,
    examples: [
      { summary: 'deactivate', value: { isActive: false } },
      { summary: 'extend and restrict to one domain', value: { expiryDate: '2027-12-31T23:59:59.000Z', domains: ['eczane.ornek.com.tr'] } },
      { summary: 'more validations a minute, sign-token back to the default', value: { rateLimits: { validate: 500, signToken: null } } },
    ],
  },
  responses: {
    200: licenseAnswer('the license as changed; `warnings` when the expiryDate given has passed', 'deactivated',
      exampleLicense({ isActive: false }), LicenseWithWarnings),
    ...errorResponses(codedErrorOf, [
      ['a field of the wrong type or out of range: the message names its path, what was wrong and what is expected',
        refusalOf(parse, { expiryDate: 'tomorrow' })],
      ['an empty body', refusalOf(parse, {})],
      ['a rate limit unknown, or no integer 0..1000000000 or null', refusalOf(parse, { rateLimits: { validate: 1.5 } })],
      ['a field unknown (the quota changes through POST .../quota)', refusalOf(parse, { totalQuota: 100 })],
      ...webhookTargetCases,
      unauthorized,
      notFound,
    ]),
  },
};

/** PATCH /admin/v1/licenses/{licenseKey}: change anything but the quota; every instance sees it on its next request. */
export function patchLicenseRoute(ctx: RouteContext, guard: AdminGuard): Route {
  return {
    method: 'patch', path: '/admin/v1/licenses/:licenseKey', errors: codedErrors, needsAuthorization: true,
    bodyLimit: ctx.config.adminBodyLimitBytes, doc, needsClientAddress: true, // the audit log's address
    handler: guard(async (req, caller) => {
      const key = licenseKeyParam(req.params[0]);
      if (key === null) return adminReplies.LICENSE_NOT_FOUND;
      const fields = await licenseFields(parse, req.body, ctx.config.webhooks);
      if ('status' in fields) return fields;
      const { body, domains } = fields;
      const license = await ctx.admin.update(key, {
        organizationName: body.organizationName,
        password: body.password,
        expiryDate: body.expiryDate === undefined ? undefined : new Date(body.expiryDate),
        isActive: body.isActive,
        domains,
        webhookUrl: body.webhookUrl,
        webhookSecret: body.webhookSecret,
        releasesPerDay: body.releasesPerDay,
        rateLimits: body.rateLimits,
      }, req, { admin: caller.name, address: caller.address, idempotencyKey: null });
      if (license === 'unsigned') return secretRequired();
      if (license === null) return adminReplies.LICENSE_NOT_FOUND;
      return licenseReply(license, 200, { warnings: body.expiryDate === undefined ? [] : expiryWarnings(license.expiryDate) });
    }),
  };
}
