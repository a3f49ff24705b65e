import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import type { Sql } from '../db/pg.js';
import * as audit from './audit.js';
import type { AuditActor } from './audit.js';
import { LICENSE_COLUMNS, licenseRowOf, type LicenseRow } from './licenseRow.js';
import { addPackage, credit, TooLate, type NewPackage, type Purchase } from './purchases.js';
import { DEFAULT_RATE_LIMITS, RATE_LIMIT_COLUMNS, type RateLimits } from './rateLimits.js';

// The Postgres store of the licenses, the source of truth: creating, changing and crediting
// a license (each with its audit record in one transaction), reading one for a hydration,
// and its redemption history. One concern: what the rest of the service asks of Postgres
// about a license, through the one LicenseStore it holds; the row's shape is in
// ./licenseRow.ts, a purchase's statements in ./purchases.ts.

/** A UUID as Postgres reads one (token ids are UUIDs: src/tokens/tokenId.ts). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
    // The lock in a statement of its own, then the read: a statement that waits for a row lock
    // reads the locked row as the committing transaction left it, but everything else from its
    // own older snapshot, so one statement doing both saw a usage batch's counts on the row
    // without its redemptions among those counted, and the copy counted them twice.
    const rows = await this.sql.begin(async (tx) => {
      await tx.unsafe('select 1 from licenses where firma_id = $1 for share', [firmaId]);
      return tx.unsafe(
        `select ${LICENSE_COLUMNS}, extract(epoch from statement_timestamp()) * 1000 as now_ms,
           (select coalesce(array_agg(token_id::text), '{}') from token_redemptions where token_id = any($2::uuid[])) as counted,
           (select coalesce(array_agg(token_id::text), '{}') from token_releases where token_id = any($3::uuid[])) as released
         from licenses where firma_id = $1`,
        [firmaId, asked as never, askedReleases as never],
      );
    });
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
