import { Type } from '@sinclair/typebox';
import type { Handler, Route } from '../../http/route.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import { bodyParser, Domains, ExpiryDate, licenseKeyParam, OrganizationName, Password, WebhookSecret, WebhookUrl } from '../schemas.js';
import { adminReplies, domainsOf, invalid, licenseReply, secretRequired, webhookTargetRefused, webhookTargetReplies } from './common.js';
import { exampleLicense, licenseAnswer, licenseKeyParam as keyParam, notFound, unauthorized } from './docs.js';

const PatchLicenseBody = Type.Object(
  {
    organizationName: Type.Optional(OrganizationName),
    password: Type.Optional(Password),
    expiryDate: Type.Optional(ExpiryDate),
    isActive: Type.Optional(Type.Boolean()),
    domains: Type.Optional(Domains),
    webhookUrl: Type.Optional(WebhookUrl),
    webhookSecret: Type.Optional(WebhookSecret),
  },
  { additionalProperties: false, minProperties: 1 },
);

const doc: RouteDoc = {
  summary: 'Change a license (anything but its quota)',
  description: 'A password change or a deactivation revokes the license\'s access tokens. In force for the very next public ' +
    'request, on every instance.',
  tags: ['admin'],
  auth: 'admin',
  params: keyParam,
  body: {
    schema: PatchLicenseBody,
    examples: [
      { summary: 'deactivate', value: { isActive: false } },
      { summary: 'extend and restrict to one domain', value: { expiryDate: '2027-12-31T23:59:59.000Z', domains: ['eczane.ornek.com.tr'] } },
    ],
  },
  responses: {
    200: licenseAnswer('the license as changed', 'deactivated', exampleLicense({ isActive: false })),
    ...errorResponses(codedErrorOf, [
      ['an empty body, or a field unknown or invalid: the message names it', invalid('expiryDate')],
      ['a webhookUrl with http:// (unless WEBHOOK_ALLOW_HTTP=1)', webhookTargetReplies.insecure],
      ['a webhookUrl whose host is, or resolves to, an internal address (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=1)', webhookTargetReplies.internal],
      unauthorized,
      notFound,
    ]),
  },
};

/** PATCH /admin/v1/licenses/{licenseKey}: change anything but the quota; every instance sees it on its next request. */
export function patchLicenseRoute(ctx: RouteContext, guard: (h: Handler) => Handler): Route {
  const parse = bodyParser(PatchLicenseBody);
  return {
    method: 'patch', path: '/admin/v1/licenses/:licenseKey', errors: codedErrors, needsAuthorization: true,
    bodyLimit: ctx.config.adminBodyLimitBytes, doc,
    handler: guard(async (req) => {
      const key = licenseKeyParam(req.params[0]);
      if (key === null) return adminReplies.LICENSE_NOT_FOUND;
      const parsed = parse(req.body);
      if (!parsed.ok) return invalid(parsed.field);
      const body = parsed.value;
      const domains = domainsOf(body.domains);
      if (domains && !Array.isArray(domains)) return domains;
      const refusedTarget = await webhookTargetRefused(body.webhookUrl, ctx.config.webhooks);
      if (refusedTarget) return refusedTarget;
      const license = await ctx.admin.update(key, {
        organizationName: body.organizationName,
        password: body.password,
        expiryDate: body.expiryDate === undefined ? undefined : new Date(body.expiryDate),
        isActive: body.isActive,
        domains,
        webhookUrl: body.webhookUrl,
        webhookSecret: body.webhookSecret,
      }, req);
      if (license === 'unsigned') return secretRequired();
      return license === null ? adminReplies.LICENSE_NOT_FOUND : licenseReply(license);
    }),
  };
}
