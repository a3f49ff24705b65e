import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import type { Sql } from '../db/pg.js';
import * as audit from './audit.js';
import type { AuditActor } from './audit.js';
import { DEFAULT_RATE_LIMITS, RATE_LIMIT_COLUMNS, type RateLimits } from './rateLimits.js';

export type { RateLimits } from './rateLimits.js';

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

/** A credited purchase: the license after it; replayed when its idempotency key had credited it before (nothing credited now). */
export type Purchase = LicenseRow & { replayed: boolean };

/** A UUID as Postgres reads one (token ids are UUIDs: src/tokens/tokenId.ts). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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

export interface NewLicense {
  licenseKey: string;
  organizationName: string;
  passwordHash: string;
  totalQuota: number;
  expiryDate: Date;
  isActive: boolean;
  domains: string[];
  webhookUrl?: string | null;
  webhookSecret?: string | null;
  releasesPerDay?: number;
  /** absent: every limit the deployment's */
  rateLimits?: RateLimits;
}

export interface LicenseChange {
  organizationName?: string;
  passwordHash?: string;
  expiryDate?: Date;
  isActive?: boolean;
  domains?: string[];
  /** null: no more webhooks (the secret is forgotten too) */
  webhookUrl?: string | null;
  webhookSecret?: string;
  releasesPerDay?: number;
  /** the limits given (a limit absent keeps its value; null: back to the deployment's) */
  rateLimits?: Partial<RateLimits>;
}

/**
 * The SET of the limits from a JSON object of those given (param, a jsonb): a limit named
 * takes its value, null included (back to the default); one not named keeps its own.
 */
function rateLimitsSet(param: string): string {
  return Object.entries(RATE_LIMIT_COLUMNS)
    .map(([field, column]) => `${column} = case when ${param}::jsonb ? '${field}' then (${param}::jsonb ->> '${field}')::integer else ${column} end`)
    .join(',\n           ');
}

/** A change only of these fields touches nothing the request path reads (no Redis copy to change). */
export function onlyWebhook(change: LicenseChange): boolean {
  return Object.entries(change).every(([field, value]) => value === undefined || field === 'webhookUrl' || field === 'webhookSecret');
}

/** What Postgres says of a license left with a webhook URL and no secret (sql/005_webhooks.sql). */
function isUnsigned(err: unknown): boolean {
  return err instanceof postgres.PostgresError && err.code === '23514' && err.constraint_name === 'licenses_webhook_signed';
}

/** A redemption as the history shows it. */
export interface Redemption {
  tokenId: string;
  imzaTipi: number;
  usedAt: Date;
  origin: string | null;
  /** a sign's redemption: how many documents its receipt names; null for validate's */
  documents: number | null;
  /** when its unit was given back (POST /api/license/release); null: not released */
  releasedAt: Date | null;
}

/** Where a page of history ends: its last redemption's time (ISO 8601, as Postgres wrote it) and token id. */
export interface RedemptionCursor {
  usedAt: string;
  tokenId: string;
}

/** The license as ./audit.ts snapshots it, after a change made in this transaction. */
async function audited(tx: postgres.TransactionSql, licenseKey: string): Promise<audit.Snapshot> {
  const after = await audit.snapshot(tx, licenseKey);
  if (after === null) throw new Error(`the license ${licenseKey} changed in this transaction is gone`);
  return after;
}

/** A purchase as the admin makes it: a package of `add` units, expiring at expiresAt (null: with the license). */
export interface NewPackage {
  add: number;
  expiresAt: Date | null;
  note: string | null;
}

/** Thrown inside a purchase's transaction to roll it back: the deadline passed first. */
class TooLate extends Error {}

/**
 * Adds a package to a license, with its purchase entry in the ledger, holding the
 * license's row lock: the package takes the next number, and the ledger's balance is the
 * license's as it then stands.
 */
async function addPackage(tx: postgres.TransactionSql, firmaId: string, pkg: NewPackage, actor: string): Promise<void> {
  await tx.unsafe(
    `with made as (
       update licenses set packages_made = packages_made + 1 where firma_id = $1
       returning packages_made, expiry_date, total_quota - used_quota as balance
     ), pkg as (
       insert into license_packages (firma_id, package_no, amount, expires_at, note)
       select $1, packages_made, $2, coalesce($3::timestamptz, expiry_date), $4 from made
       returning package_no
     )
     insert into license_ledger (firma_id, kind, amount, balance_after, package_no, actor, note)
     select $1, 'purchase', $2, made.balance, pkg.package_no, $5, $4 from made, pkg`,
    [firmaId, pkg.add, pkg.expiresAt, pkg.note, actor],
  );
}

/**
 * Credits a purchase, once per idempotency key: a retry with the key credits nothing and
 * returns the license as it is, marked replayed. 'reused': the key was used for another purchase.
 * null: no such license, or past the deadline.
 */
async function credit(
  tx: postgres.TransactionSql, licenseKey: string, pkg: NewPackage, deadlineMs: number, idempotencyKey: string | null, actor: string,
): Promise<Purchase | 'reused' | null> {
  const target = await tx.unsafe(`select firma_id from licenses where license_key = $1 for update`, [licenseKey]);
  const firmaId = target[0]?.firma_id as string | undefined;
  if (firmaId === undefined) return null;
  if (idempotencyKey !== null) {
    const recorded = await tx.unsafe(
      `insert into quota_purchases (idempotency_key, license_key, add, expires_at, note, whole) values ($1, $2, $3, $4, $5, true)
       on conflict (idempotency_key) do nothing returning idempotency_key`,
      [idempotencyKey, licenseKey, pkg.add, pkg.expiresAt, pkg.note],
    );
    if (recorded.length === 0) {
      // the same purchase is the same license, amount, expiry and note (sql/017_purchase_fields.sql)
      const earlier = await tx.unsafe(
        `select 1 from quota_purchases where idempotency_key = $1 and license_key = $2 and add = $3
           and (not whole or (expires_at is not distinct from $4 and note is not distinct from $5))`,
        [idempotencyKey, licenseKey, pkg.add, pkg.expiresAt, pkg.note],
      );
      if (earlier.length === 0) return 'reused';
      const rows = await tx.unsafe(`select ${LICENSE_COLUMNS} from licenses where firma_id = $1`, [firmaId]);
      return { ...licenseRowOf(rows[0] as Record<string, unknown>), replayed: true };
    }
  }
  const credited = await tx.unsafe(
    `update licenses set total_quota = total_quota + $2, version = version + 1, updated_at = now()
     where firma_id = $1 and clock_timestamp() < to_timestamp($3::float8 / 1000) returning firma_id`,
    [firmaId, pkg.add, deadlineMs],
  );
  if (credited.length === 0) throw new TooLate();
  await addPackage(tx, firmaId, pkg, actor);
  const rows = await tx.unsafe(`select ${LICENSE_COLUMNS} from licenses where firma_id = $1`, [firmaId]);
  return { ...licenseRowOf(rows[0] as Record<string, unknown>), replayed: false };
}

export class LicenseStore {
  constructor(private readonly sql: Sql) {}

  static newFirmaId(): string {
    return randomBytes(9).toString('base64url');
  }

  /** null when the license key is taken. The creation and its audit record (./audit.ts) are one transaction. */
  async create(input: NewLicense, actor: AuditActor): Promise<LicenseRow | null> {
    const limits = { ...DEFAULT_RATE_LIMITS, ...input.rateLimits };
    return this.sql.begin(async (tx) => {
      const rows = await tx.unsafe(
        `insert into licenses (firma_id, license_key, organization_name, password_hash, total_quota, expiry_date, is_active, domains,
                               webhook_url, webhook_secret, releases_per_day, rate_get_token_per_min, rate_sign_token_per_min,
                               rate_validate_per_min, rate_check_quota_per_min)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
         on conflict (license_key) do nothing
         returning ${LICENSE_COLUMNS}`,
        [LicenseStore.newFirmaId(), input.licenseKey, input.organizationName, input.passwordHash,
          input.totalQuota, input.expiryDate, input.isActive, input.domains as never, input.webhookUrl ?? null, input.webhookSecret ?? null,
          input.releasesPerDay ?? 0, limits.getToken, limits.signToken, limits.validate, limits.checkQuota],
      );
      if (!rows[0]) return null;
      const firmaId = rows[0].firma_id as string;
      if (input.totalQuota > 0) await addPackage(tx, firmaId, { add: input.totalQuota, expiresAt: null, note: null }, actor.admin);
      await audit.record(tx, input.licenseKey, 'create', null, await audited(tx, input.licenseKey), actor);
      return this.reread(tx, firmaId);
    });
  }

  /** The row as this transaction now sees it. */
  private async reread(tx: postgres.TransactionSql, firmaId: string): Promise<LicenseRow> {
    const rows = await tx.unsafe(`select ${LICENSE_COLUMNS} from licenses where firma_id = $1`, [firmaId]);
    return licenseRowOf(rows[0] as Record<string, unknown>);
  }

  async byKey(licenseKey: string): Promise<LicenseRow | null> {
    const rows = await this.sql.unsafe(`select ${LICENSE_COLUMNS} from licenses where license_key = $1`, [licenseKey]);
    return rows[0] ? licenseRowOf(rows[0]) : null;
  }

  async byFirmaId(firmaId: string): Promise<LicenseRow | null> {
    const rows = await this.sql.unsafe(`select ${LICENSE_COLUMNS} from licenses where firma_id = $1`, [firmaId]);
    return rows[0] ? licenseRowOf(rows[0]) : null;
  }

  /**
   * The license about to be changed, and the time by Postgres's clock: an admin change
   * fences the Redis copy until a deadline on that clock (src/licenses/changes.ts).
   */
  async locate(licenseKey: string): Promise<{ firmaId: string; nowMs: number } | null> {
    const rows = await this.sql.unsafe(
      `select firma_id, extract(epoch from clock_timestamp()) * 1000 as now_ms from licenses where license_key = $1`,
      [licenseKey],
    );
    return rows[0] ? { firmaId: rows[0].firma_id as string, nowMs: Math.floor(Number(rows[0].now_ms)) } : null;
  }

  /**
   * Changes a license unless its deadline (ms, Postgres's clock) has passed: after it, the
   * fence it set may be lifted by a hydration, which must not miss the change. A new
   * password or a deactivation raises the token generation (the access tokens issued
   * before are revoked). null: no such license, or too late (Change.late); deadline null:
   * none (a change the Redis copy does not hold). 'unsigned': a webhook URL would be left
   * without a secret, nothing changed.
   */
  async update(licenseKey: string, change: LicenseChange, deadlineMs: number | null, actor: AuditActor): Promise<LicenseRow | 'unsigned' | null> {
    // the change and its audit record are one transaction; the row is locked from the first read
    const outcome = this.sql.begin(async (tx) => {
      const before = await audit.snapshot(tx, licenseKey);
      if (before === null) return null;
      const rows = await tx.unsafe(
        `update licenses set
           organization_name = coalesce($2, organization_name),
           password_hash = coalesce($3, password_hash),
           expiry_date = coalesce($4, expiry_date),
           is_active = coalesce($5, is_active),
           domains = coalesce($6::text[], domains),
           token_generation = token_generation + case when $3::text is not null or $5::boolean = false then 1 else 0 end,
           webhook_url = case when $8::boolean then null else coalesce($9, webhook_url) end,
           webhook_secret = case when $8::boolean then null else coalesce($10, webhook_secret) end,
           releases_per_day = coalesce($11::int, releases_per_day),
           ${rateLimitsSet('$12')},
           version = version + 1, updated_at = now()
         where license_key = $1 and ($7::float8 is null or clock_timestamp() < to_timestamp($7::float8 / 1000))
         returning ${LICENSE_COLUMNS}`,
        [licenseKey, change.organizationName ?? null, change.passwordHash ?? null, change.expiryDate ?? null,
          change.isActive ?? null, (change.domains ?? null) as never, deadlineMs, change.webhookUrl === null,
          change.webhookUrl ?? null, change.webhookSecret ?? null, change.releasesPerDay ?? null, (change.rateLimits ?? {}) as never],
      );
      if (!rows[0]) return null;
      await audit.record(tx, licenseKey, 'update', before, await audited(tx, licenseKey), actor);
      return licenseRowOf(rows[0]);
    });
    // a refused statement aborts the transaction: the refusal is read once it has rolled back
    return outcome.catch((err: unknown) => {
      if (isUnsigned(err)) return 'unsigned' as const;
      throw err;
    });
  }

  /**
   * Credits a purchase, once per idempotency key: a retry with the key credits nothing and
   * returns the license as it is, marked replayed. 'reused': the key was used for another purchase.
   * null: no such license, or past the deadline (see update).
   */
  async addQuota(
    licenseKey: string, pkg: NewPackage, deadlineMs: number, idempotencyKey: string | null, actor: AuditActor,
  ): Promise<Purchase | 'reused' | null> {
    // the purchase, its package, its ledger entry and its audit record are one transaction; a
    // replay or a refused key changes nothing and records nothing
    const outcome = this.sql.begin(async (tx) => {
      const before = await audit.snapshot(tx, licenseKey);
      if (before === null) return null;
      const purchase = await credit(tx, licenseKey, pkg, deadlineMs, idempotencyKey, actor.admin);
      if (purchase !== null && purchase !== 'reused' && !purchase.replayed) {
        await audit.record(tx, licenseKey, 'add-quota', before, await audited(tx, licenseKey), actor);
      }
      return purchase;
    });
    return outcome.catch((err: unknown) => {
      if (err instanceof TooLate) return null;
      throw err;
    });
  }

  /**
   * The row to hydrate Redis from, read with a share lock so that an admin change in
   * flight commits first, with the time by Postgres's clock when the read began; and of
   * the given redemptions and releases (still queued in Redis), those Postgres already counts.
   */
  async forHydration(
    firmaId: string, queuedTokenIds: string[] = [], queuedReleaseIds: string[] = [],
  ): Promise<{ row: LicenseRow; nowMs: number; counted: Set<string>; released: Set<string> } | null> {
    // an id that is no UUID cannot have been written (src/usage/persist.ts): not asked about
    const asked = queuedTokenIds.filter((id) => UUID.test(id));
    const askedReleases = queuedReleaseIds.filter((id) => UUID.test(id));
    const rows = await this.sql.unsafe(
      `select ${LICENSE_COLUMNS}, extract(epoch from statement_timestamp()) * 1000 as now_ms,
         (select coalesce(array_agg(token_id::text), '{}') from token_redemptions where token_id = any($2::uuid[])) as counted,
         (select coalesce(array_agg(token_id::text), '{}') from token_releases where token_id = any($3::uuid[])) as released
       from licenses where firma_id = $1 for share`,
      [firmaId, asked as never, askedReleases as never],
    );
    const r = rows[0];
    if (!r) return null;
    // Postgres writes UUIDs in lower case: the ids as queued are matched in lower case too
    const counted = new Set((r.counted as string[]));
    const released = new Set((r.released as string[]));
    return {
      row: licenseRowOf(r), nowMs: Math.floor(Number(r.now_ms)),
      counted: new Set(asked.filter((id) => counted.has(id.toLowerCase()))),
      released: new Set(askedReleases.filter((id) => released.has(id.toLowerCase()))),
    };
  }

  /** The license's token generation (access tokens of an older one are revoked); null: no such license. */
  async tokenGeneration(firmaId: string): Promise<number | null> {
    const rows = await this.sql`select token_generation::float8 as g from licenses where firma_id = ${firmaId}`;
    return rows[0] ? (rows[0].g as number) : null;
  }

  /**
   * A license's redemptions, newest first: at most `limit`, and only those before `after`
   * (the last of the previous page) in (used at, token id) order.
   */
  async redemptions(firmaId: string, limit: number, after: RedemptionCursor | null): Promise<Redemption[]> {
    const rows = await this.sql`
      select r.token_id, r.imza_tipi, r.used_at, r.origin, r.documents, x.released_at from (
        select token_id, imza_tipi, used_at, origin, documents from token_redemptions
        where firma_id = ${firmaId}
          ${after ? this.sql`and (used_at, token_id) < (${after.usedAt}::timestamptz, ${after.tokenId}::uuid)` : this.sql``}
        order by used_at desc, token_id desc
        limit ${limit}) r
      left join token_releases x on x.token_id = r.token_id
      order by r.used_at desc, r.token_id desc`;
    return rows.map((r) => ({
      tokenId: r.token_id as string, imzaTipi: r.imza_tipi as number, usedAt: r.used_at as Date, origin: (r.origin as string | null) ?? null,
      documents: (r.documents as number | null) ?? null, releasedAt: (r.released_at as Date | null) ?? null,
    }));
  }
}
