import type { RateLimits } from './rateLimits.js';

// A license as Postgres holds it, and how a row of the licenses table (with its packages)
// is read into one. One concern: LICENSE_COLUMNS and licenseRowOf must name the same
// columns, and every reader of a license (the store, the purchases, the admin lists) selects
// with them.

/** A license row as Postgres holds it (the source of truth). */
export interface LicenseRow {
  firmaId: string;
  licenseKey: string;
  organizationName: string;
  passwordHash: string;
  totalQuota: number;
  usedQuota: number;
  expiryDate: Date;
  isActive: boolean;
  domains: string[];
  version: number;
  /** raised by a password change or a deactivation: access tokens of an older generation are refused */
  tokenGeneration: number;
  /** where the worker sends the license's webhooks (docs/api.md#webhooks); null: none */
  webhookUrl: string | null;
  /** whether a webhook secret is stored (the secret itself is read only to sign deliveries) */
  webhookSecretSet: boolean;
  /** units of expired packages never spent (totalQuota is net of them) */
  forfeitedQuota: number;
  /** the number of the license's last package */
  packagesMade: number;
  /** its packages, in the order bought, as the usage worker has written them */
  packages: PackageRow[];
  /** units a day the holder may give back after a failed signing (0: none) */
  releasesPerDay: number;
  /** units given back so far (used quota is net of them) */
  releasedQuota: number;
  /** its own limits per minute (null: the deployment's RATE_*_PER_MIN; 0: none) */
  rateLimits: RateLimits;
}

/** A package: one purchase (or the opening balance of a license older than packages), with its own expiry. */
export interface PackageRow {
  no: number;
  amount: number;
  used: number;
  forfeited: number;
  expiresAt: Date;
  createdAt: Date;
  note: string | null;
}

/** A package's figures as both the admin's License and the holder's ledger show them (the admin's adds the note). */
export function packageFigures(p: PackageRow): { id: number; amount: number; used: number; remaining: number; forfeited: number; expiresAt: string; createdAt: string } {
  return {
    id: p.no, amount: p.amount, used: p.used, remaining: Math.max(0, p.amount - p.used - p.forfeited), forfeited: p.forfeited,
    expiresAt: p.expiresAt.toISOString(), createdAt: p.createdAt.toISOString(),
  };
}

/** The columns of a LicenseRow, numbers as float8 (exact to 2^53), for licenseRowOf. */
export const LICENSE_COLUMNS = `firma_id, license_key, organization_name, password_hash, total_quota::float8 as total_quota,
  used_quota::float8 as used_quota, expiry_date, is_active, domains, version::float8 as version,
  token_generation::float8 as token_generation, webhook_url, webhook_secret is not null as webhook_secret_set,
  forfeited_quota::float8 as forfeited_quota, packages_made, releases_per_day, released_quota::float8 as released_quota,
  rate_get_token_per_min, rate_sign_token_per_min, rate_validate_per_min, rate_check_quota_per_min,
  (select coalesce(json_agg(json_build_object('no', p.package_no, 'amount', p.amount::float8, 'used', p.used::float8,
     'forfeited', p.forfeited::float8, 'expiresAt', p.expires_at, 'createdAt', p.created_at, 'note', p.note) order by p.package_no), '[]')
   from license_packages p where p.firma_id = licenses.firma_id) as packages`;

interface PackageJson { no: number; amount: number; used: number; forfeited: number; expiresAt: string; createdAt: string; note: string | null }

export function licenseRowOf(r: Record<string, unknown>): LicenseRow {
  return {
    firmaId: r.firma_id as string,
    licenseKey: r.license_key as string,
    organizationName: r.organization_name as string,
    passwordHash: r.password_hash as string,
    totalQuota: r.total_quota as number,
    usedQuota: r.used_quota as number,
    expiryDate: r.expiry_date as Date,
    isActive: r.is_active as boolean,
    domains: r.domains as string[],
    version: r.version as number,
    tokenGeneration: r.token_generation as number,
    webhookUrl: (r.webhook_url as string | null) ?? null,
    webhookSecretSet: r.webhook_secret_set as boolean,
    forfeitedQuota: r.forfeited_quota as number,
    packagesMade: r.packages_made as number,
    releasesPerDay: r.releases_per_day as number,
    releasedQuota: r.released_quota as number,
    packages: (r.packages as PackageJson[]).map((p) => ({
      no: p.no, amount: p.amount, used: p.used, forfeited: p.forfeited, expiresAt: new Date(p.expiresAt), createdAt: new Date(p.createdAt),
      note: p.note,
    })),
    rateLimits: {
      getToken: (r.rate_get_token_per_min as number | null) ?? null,
      signToken: (r.rate_sign_token_per_min as number | null) ?? null,
      validate: (r.rate_validate_per_min as number | null) ?? null,
      checkQuota: (r.rate_check_quota_per_min as number | null) ?? null,
    },
  };
}
