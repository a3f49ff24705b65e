// Human output: aligned tables and key-value blocks on stdout. (--json prints the API's
// data instead: licensectl.ts.)

/** A value as one cell: no line breaks or control characters (a name could hold them). */
function cell(value: unknown): string {
  const text = value === null || value === undefined ? '-' : String(value);
  // eslint-disable-next-line no-control-regex -- a cell is one line of printable text
  return text.replace(/[\u0000-\u001f\u007f]/g, ' ');
}

/** Columns padded to their widest cell, a header line first. */
export function table(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = [headers.map(cell), ...rows.map((r) => r.map(cell))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => [...(r[i] ?? '')].length)));
  return cells
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat((widths[i] ?? 0) - [...c].length))).join('  '))
    .join('\n') + '\n';
}

/** "label  value" lines, the labels padded to the longest. */
export function keyValues(pairs: readonly (readonly [string, unknown])[]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`).join('\n') + '\n';
}

/** A License (the schema of /admin/openapi.json) as the admin API answers it. */
export interface License {
  licenseKey: string;
  firmaId: string;
  organizationName: string;
  totalQuota: number;
  usedQuota: number;
  remainingQuota: number;
  quotaPercentage: number;
  expiryDate: string;
  isActive: boolean;
  domains: string[];
  /** where the worker POSTs this license's events; null: none (docs/api.md "Webhooks") */
  webhookUrl: string | null;
  webhookSecretSet: boolean;
  packages: Package[];
  /** units a day the holder may give back after a failed signing; 0: none */
  releasesPerDay: number;
  /** the license's own limits per minute; null: the deployment's (docs/api.md "Limits") */
  rateLimits: RateLimits;
}

export interface RateLimits {
  getToken: number | null;
  signToken: number | null;
  validate: number | null;
  checkQuota: number | null;
}

/** The license's own limits in a line: "validate 500/min, the others the default". */
function limitsOf(l: License): string {
  const own = Object.entries(l.rateLimits ?? {}).filter(([, v]) => v !== null)
    .map(([name, v]) => `${LIMIT_NAMES[name] ?? name} ${v === 0 ? 'none' : `${v as number}/min`}`);
  if (own.length === 0) return 'the default';
  return own.length === 4 ? own.join(', ') : `${own.join(', ')}; the others the default`;
}

const LIMIT_NAMES: Record<string, string> = { getToken: 'get-token', signToken: 'sign-token', validate: 'validate', checkQuota: 'check-quota' };

/** A package of a License: one purchase with its own expiry. */
export interface Package {
  id: number;
  amount: number;
  used: number;
  remaining: number;
  forfeited: number;
  expiresAt: string;
  createdAt: string;
  note: string | null;
}

export interface IssuedToken {
  tokenId: string;
  imzaTipi: number;
  status: string;
  issuedAt: string;
  expiresAt: string | null;
  usedAt: string | null;
  origin: string | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

const domainsOf = (l: License): string => (l.domains.length === 0 ? '(any origin)' : l.domains.join(', '));

export function licenseBlock(l: License): string {
  return keyValues([
    ['License key', l.licenseKey],
    ['Firma id', l.firmaId],
    ['Organization', l.organizationName],
    ['Total quota', l.totalQuota],
    ['Used', l.usedQuota],
    ['Remaining', `${l.remainingQuota} (${l.quotaPercentage}%)`],
    ['Expiry', l.expiryDate],
    ['Active', l.isActive ? 'yes' : 'no'],
    ['Domains', domainsOf(l)],
    ['Webhook', l.webhookUrl === null ? '-' : `${l.webhookUrl} (secret ${l.webhookSecretSet ? 'set' : 'not set'})`],
    ['Rate limits', limitsOf(l)],
    ['Releases a day', l.releasesPerDay === 0 ? 'none' : l.releasesPerDay],
  ]) + (l.packages.length === 0 ? '' : `\nPackages (spent earliest expiry first):\n${packageTable(l.packages)}`);
}

export function packageTable(items: readonly Package[]): string {
  return table(
    ['ID', 'AMOUNT', 'USED', 'LEFT', 'FORFEITED', 'EXPIRES', 'BOUGHT', 'NOTE'],
    items.map((p) => [p.id, p.amount, p.used, p.remaining, p.forfeited, p.expiresAt, p.createdAt.slice(0, 10), p.note]),
  );
}

/** A line of a license's ledger (GET /admin/v1/licenses/{key}/ledger). */
export interface LedgerLine {
  kind: string;
  at: string;
  amount: number;
  balanceAfter: number | null;
  packageId: number | null;
  actor: string | null;
  note: string | null;
  day: string | null;
}

export interface LedgerPage extends Page<LedgerLine> {
  totals: { purchased: number; corrected: number; forfeited: number; released: number; redeemed: number; totalQuota: number; usedQuota: number };
}

export function ledgerTable(page: LedgerPage): string {
  const t = page.totals;
  const lines = table(
    ['WHEN', 'KIND', 'AMOUNT', 'BALANCE AFTER', 'PACKAGE', 'BY', 'NOTE'],
    page.items.map((l) => [l.day ?? l.at, l.kind, l.amount > 0 ? `+${l.amount}` : l.amount, l.balanceAfter, l.packageId, l.actor, l.note]),
  );
  return `${lines}\nTotals: purchased ${t.purchased}, corrected ${t.corrected}, forfeited ${t.forfeited}, redeemed ${t.redeemed}, `
    + `released ${t.released}: total ${t.totalQuota}, used ${t.usedQuota}, left ${t.totalQuota - t.usedQuota}\n`;
}

export function licenseTable(items: readonly License[]): string {
  return table(
    ['LICENSE KEY', 'ORGANIZATION', 'USED', 'TOTAL', 'LEFT', 'EXPIRY', 'ACTIVE', 'DOMAINS'],
    items.map((l) => [l.licenseKey, l.organizationName, l.usedQuota, l.totalQuota, l.remainingQuota, l.expiryDate.slice(0, 10),
      l.isActive ? 'yes' : 'no', domainsOf(l)]),
  );
}

export function tokenTable(items: readonly IssuedToken[]): string {
  return table(
    ['TOKEN ID', 'TYPE', 'STATUS', 'ISSUED', 'EXPIRES', 'USED', 'ORIGIN'],
    items.map((t) => [t.tokenId, t.imzaTipi, t.status, t.issuedAt, t.expiresAt, t.usedAt, t.origin]),
  );
}

/** A record of the admin audit log (GET /admin/v1/audit). */
export interface AuditRecord {
  id: number;
  at: string;
  licenseKey: string;
  action: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown>;
  admin: string;
  address: string;
  idempotencyKey: string | null;
}

/** A field's value in a summary: text as it is, anything else as JSON. */
function shortValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value) ?? 'null';
}

/** What a record changed, on one line: "field: before -> after; ..." (a create: "field=value, ..."). */
export function changeSummary(r: AuditRecord): string {
  // in name order: Postgres keeps a record's fields in an order of its own (jsonb)
  const fields = Object.keys(r.after).sort();
  const parts = r.before === null
    ? fields.map((f) => `${f}=${shortValue(r.after[f])}`)
    : fields.map((f) => `${f}: ${shortValue(r.before?.[f])} -> ${shortValue(r.after[f])}`);
  const text = parts.length === 0 ? '(no field changed)' : parts.join(r.before === null ? ', ' : '; ');
  return r.idempotencyKey === null ? text : `${text} (idempotency key ${r.idempotencyKey})`;
}

export function auditTable(items: readonly AuditRecord[]): string {
  return table(
    ['WHEN', 'ADMIN', 'ADDRESS', 'ACTION', 'LICENSE KEY', 'CHANGES'],
    items.map((r) => [r.at, r.admin, r.address === '' ? '-' : r.address, r.action, r.licenseKey, changeSummary(r)]),
  );
}
