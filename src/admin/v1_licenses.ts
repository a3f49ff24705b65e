import { randomUUID, timingSafeEqual, createHash } from 'node:crypto';
import type { Route } from '../http/server.js';
import { codeShape, reply, type Reply } from '../http/reply.js';
import { type ApiContext, canonicalKey } from '../api/context.js';
import { quotaPercentage } from '../api/license_checkQuota.js';
import {
  AddQuotaBody, bearer, bodyParser, CreateLicenseBody, idempotencyKeyHeader, licenseKeyParam, PatchLicenseBody,
} from '../api/schemas.js';
import { normaliseDomain } from '../licenses/origin.js';
import { changeLicense } from '../licenses/changes.js';
import type { LicenseRow } from '../licenses/store.js';

const unauthorized = reply(401, { success: false, error: { code: 'UNAUTHORIZED', message: 'Yönetici yetkisi gerekli' } });
const notFound = reply(404, { success: false, error: { code: 'LICENSE_NOT_FOUND', message: 'Lisans bulunamadı' } });
const keyReused = reply(422, {
  success: false, error: { code: 'IDEMPOTENCY_KEY_REUSED', message: 'Bu işlem anahtarı başka bir satın alma için kullanıldı' },
});
const exists = reply(409, { success: false, error: { code: 'LICENSE_EXISTS', message: 'Bu lisans anahtarı zaten kayıtlı' } });

function invalid(field: string, why = 'geçersiz'): Reply {
  return reply(400, { success: false, error: { code: 'INVALID_REQUEST', message: `${field}: ${why}` } });
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Domains normalised, or the first bad entry. */
function domainsOf(entries: string[] | undefined): string[] | Reply | undefined {
  if (entries === undefined) return undefined;
  const out = new Set<string>();
  for (const entry of entries) {
    const domain = normaliseDomain(entry);
    if (domain === null) return invalid('domains', `"${entry}" bir alan adı değil`);
    out.add(domain);
  }
  return [...out];
}

/** The admin API (CONTRACT.md): Postgres first, then the Redis copy, then every instance's cache. */
export function adminRoutes(ctx: ApiContext, adminToken: string): Route[] {
  const expected = digest(adminToken);
  const parseCreate = bodyParser(CreateLicenseBody);
  const parsePatch = bodyParser(PatchLicenseBody);
  const parseQuota = bodyParser(AddQuotaBody);
  const limit = ctx.config.adminBodyLimitBytes;

  function authorised(header: string): boolean {
    const token = bearer(header);
    return token !== null && timingSafeEqual(digest(token), expected);
  }

  /** Tells every instance of a key just created (src/licenses/knownKeys.ts). */
  async function announce(licenseKey: string): Promise<void> {
    await ctx.redis.publish(ctx.keys.invalidationChannel, licenseKey);
  }

  /** The row as Postgres has it, with the used count of the Redis copy (ahead by the worker lag). */
  async function view(row: LicenseRow, status = 200): Promise<Reply> {
    const usedQuota = (await ctx.hot.usedQuota(row.firmaId)) ?? row.usedQuota;
    const totalQuota = row.totalQuota;
    return reply(status, {
      success: true,
      data: {
        licenseKey: row.licenseKey,
        firmaId: row.firmaId,
        organizationName: row.organizationName,
        totalQuota,
        usedQuota,
        remainingQuota: Math.max(0, totalQuota - usedQuota),
        quotaPercentage: quotaPercentage(totalQuota, usedQuota),
        expiryDate: row.expiryDate.toISOString(),
        isActive: row.isActive,
        domains: row.domains,
      },
    });
  }

  const guard = (handler: Route['handler']): Route['handler'] => (req) =>
    authorised(req.authorization) ? handler(req) : unauthorized;

  return [
    {
      method: 'post', path: '/admin/v1/licenses', errors: codeShape, needsAuthorization: true, bodyLimit: limit,
      handler: guard(async (req) => {
        const parsed = parseCreate(req.body);
        if (!parsed.ok) return invalid(parsed.field);
        const body = parsed.value;
        const domains = domainsOf(body.domains);
        if (domains && !Array.isArray(domains)) return domains;
        const licenseKey = canonicalKey(body.licenseKey ?? randomUUID());
        // before Postgres: an "unknown key" remembered in Redis must not outlive the create
        await ctx.redis.del(ctx.keys.unknownKey(licenseKey));
        const row = await ctx.store.create({
          licenseKey,
          organizationName: body.organizationName,
          passwordHash: await ctx.passwords.hash(body.password, req),
          totalQuota: body.totalQuota,
          expiryDate: new Date(body.expiryDate),
          isActive: body.isActive ?? true,
          domains: domains ?? [],
        });
        if (row === null) return exists;
        await ctx.hot.write(row); // no copy existed, so none can be stale if this fails
        await announce(row.licenseKey);
        return view(row, 201);
      }),
    },
    {
      method: 'get', path: '/admin/v1/licenses/:licenseKey', errors: codeShape, needsAuthorization: true,
      handler: guard(async (req) => {
        const key = licenseKeyParam(req.params[0]);
        const row = key === null ? null : await ctx.store.byKey(key);
        return row === null ? notFound : view(row);
      }),
    },
    {
      method: 'patch', path: '/admin/v1/licenses/:licenseKey', errors: codeShape, needsAuthorization: true, bodyLimit: limit,
      handler: guard(async (req) => {
        const key = licenseKeyParam(req.params[0]);
        if (key === null) return notFound;
        const parsed = parsePatch(req.body);
        if (!parsed.ok) return invalid(parsed.field);
        const body = parsed.value;
        const domains = domainsOf(body.domains);
        if (domains && !Array.isArray(domains)) return domains;
        const passwordHash = body.password === undefined ? undefined : await ctx.passwords.hash(body.password, req);
        const row = await changeLicense<never>(ctx.store, ctx.hot, key, (deadline) => ctx.store.update(key, {
          organizationName: body.organizationName,
          passwordHash,
          expiryDate: body.expiryDate === undefined ? undefined : new Date(body.expiryDate),
          isActive: body.isActive,
          domains,
        }, deadline));
        if (row === null) return notFound;
        return view(row);
      }),
    },
    {
      method: 'post', path: '/admin/v1/licenses/:licenseKey/quota', errors: codeShape, needsAuthorization: true, bodyLimit: limit,
      needsIdempotencyKey: true,
      handler: guard(async (req) => {
        const key = licenseKeyParam(req.params[0]);
        if (key === null) return notFound;
        const parsed = parseQuota(req.body);
        if (!parsed.ok) return invalid(parsed.field);
        const idempotencyKey = idempotencyKeyHeader(req.idempotencyKey);
        if (idempotencyKey === false) return invalid('Idempotency-Key', '1-255 yazdırılabilir ASCII karakter olmalı');
        const add = parsed.value.add;
        const row = await changeLicense(ctx.store, ctx.hot, key, (deadline) => ctx.store.addQuota(key, add, deadline, idempotencyKey));
        if (row === null) return notFound;
        if (row === 'reused') return keyReused;
        return view(row);
      }),
    },
  ];
}
