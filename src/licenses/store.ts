import { randomBytes } from 'node:crypto';
import type { Sql } from '../db/pg.js';

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
}

const columns = `firma_id, license_key, organization_name, password_hash, total_quota::float8 as total_quota,
  used_quota::float8 as used_quota, expiry_date, is_active, domains, version::float8 as version`;

function toRow(r: Record<string, unknown>): LicenseRow {
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
  };
}

export interface NewLicense {
  licenseKey: string;
  organizationName: string;
  passwordHash: string;
  totalQuota: number;
  expiryDate: Date;
  isActive: boolean;
  domains: string[];
}

export interface LicenseChange {
  organizationName?: string;
  passwordHash?: string;
  expiryDate?: Date;
  isActive?: boolean;
  domains?: string[];
}

export class LicenseStore {
  constructor(private readonly sql: Sql) {}

  static newFirmaId(): string {
    return randomBytes(9).toString('base64url');
  }

  /** null when the license key is taken. */
  async create(input: NewLicense): Promise<LicenseRow | null> {
    const rows = await this.sql.unsafe(
      `insert into licenses (firma_id, license_key, organization_name, password_hash, total_quota, expiry_date, is_active, domains)
       values ($1, $2, $3, $4, $5, $6, $7, $8)
       on conflict (license_key) do nothing
       returning ${columns}`,
      [LicenseStore.newFirmaId(), input.licenseKey, input.organizationName, input.passwordHash,
        input.totalQuota, input.expiryDate, input.isActive, input.domains as never],
    );
    return rows[0] ? toRow(rows[0]) : null;
  }

  async byKey(licenseKey: string): Promise<LicenseRow | null> {
    const rows = await this.sql.unsafe(`select ${columns} from licenses where license_key = $1`, [licenseKey]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  async byFirmaId(firmaId: string): Promise<LicenseRow | null> {
    const rows = await this.sql.unsafe(`select ${columns} from licenses where firma_id = $1`, [firmaId]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  async update(licenseKey: string, change: LicenseChange): Promise<LicenseRow | null> {
    const rows = await this.sql.unsafe(
      `update licenses set
         organization_name = coalesce($2, organization_name),
         password_hash = coalesce($3, password_hash),
         expiry_date = coalesce($4, expiry_date),
         is_active = coalesce($5, is_active),
         domains = coalesce($6::text[], domains),
         version = version + 1, updated_at = now()
       where license_key = $1
       returning ${columns}`,
      [licenseKey, change.organizationName ?? null, change.passwordHash ?? null, change.expiryDate ?? null,
        change.isActive ?? null, (change.domains ?? null) as never],
    );
    return rows[0] ? toRow(rows[0]) : null;
  }

  async addQuota(licenseKey: string, add: number): Promise<LicenseRow | null> {
    const rows = await this.sql.unsafe(
      `update licenses set total_quota = total_quota + $2, version = version + 1, updated_at = now()
       where license_key = $1 returning ${columns}`,
      [licenseKey, add],
    );
    return rows[0] ? toRow(rows[0]) : null;
  }

  /** Tokenstatus from the audit trail, for a token whose Redis marker was lost. */
  async tokenStatus(tokenId: string): Promise<'issued' | 'used' | null> {
    const rows = await this.sql`select status from sign_tokens where token_id = ${tokenId}`;
    return rows[0] ? (rows[0].status as 'issued' | 'used') : null;
  }
}
