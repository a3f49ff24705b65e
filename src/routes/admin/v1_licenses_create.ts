import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { Handler, Route } from '../../http/route.js';
import { EXAMPLE } from '../../openapi/examples.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import {
  bodyParser, canonicalKey, Domains, ExpiryDate, LicenseKey, OrganizationName, Password, Quota, WebhookSecret, WebhookUrl,
} from '../schemas.js';
import { adminReplies, domainsOf, invalid, licenseReply, secretRequired, webhookTargetRefused, webhookTargetReplies } from './common.js';
import { exampleLicense, licenseAnswer, unauthorized } from './docs.js';

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
  },
  { additionalProperties: false },
);

const doc: RouteDoc = {
  summary: 'Create a license',
  description: 'The key is the caller\'s (a UUID) or generated. The password is stored hashed and never shown again.',
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
    }],
  },
  responses: {
    201: licenseAnswer('created', 'a new license', exampleLicense({ usedQuota: 0 }, 201)),
    ...errorResponses(codedErrorOf, [
      ['a field missing, unknown or invalid: the message names it', invalid('totalQuota')],
      ['a domain that is no host name', invalid('domains', '"https://" bir alan adı değil')],
      ['a webhookUrl with http:// (unless WEBHOOK_ALLOW_HTTP=1)', webhookTargetReplies.insecure],
      ['a webhookUrl whose host is, or resolves to, an internal address (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=1)', webhookTargetReplies.internal],
      unauthorized,
      ['the licenseKey given is taken', adminReplies.LICENSE_EXISTS],
    ]),
  },
};

/** POST /admin/v1/licenses: a new license; the key is the caller's or generated. */
export function createLicenseRoute(ctx: RouteContext, guard: (h: Handler) => Handler): Route {
  const parse = bodyParser(CreateLicenseBody);
  return {
    method: 'post', path: '/admin/v1/licenses', errors: codedErrors, needsAuthorization: true, bodyLimit: ctx.config.adminBodyLimitBytes, doc,
    handler: guard(async (req) => {
      const parsed = parse(req.body);
      if (!parsed.ok) return invalid(parsed.field);
      const body = parsed.value;
      const domains = domainsOf(body.domains);
      if (domains && !Array.isArray(domains)) return domains;
      const refusedTarget = await webhookTargetRefused(body.webhookUrl, ctx.config.webhooks);
      if (refusedTarget) return refusedTarget;
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
      }, req);
      return license === null ? adminReplies.LICENSE_EXISTS : licenseReply(license, 201);
    }),
  };
}
