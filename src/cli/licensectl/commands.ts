import { AdminApi, licensePath } from './api.js';
import { UsageError } from './args.js';
import {
  auditTable, ledgerTable, licenseBlock, licenseTable, tokenTable, type AuditRecord, type IssuedToken, type LedgerLine, type LedgerPage, type License,
  type Page,
} from './output.js';
import { hiddenValueFrom, passwordFrom } from './password.js';
import { domainsOf, expiryOf, rateLimitOf, sinceOf, wholeNumberOf } from './values.js';

// Every command but import (import.ts): one call or a few to the admin API, and what to
// print: `data` for --json (exactly the API's data), `human` otherwise.

export interface Run {
  api: AdminApi;
  args: Record<string, string>;
  options: Record<string, string | boolean | undefined>;
}

export interface Printed {
  data: unknown;
  human: string;
  /** lines for stderr, with --json too: what the API warned about */
  warnings?: string[];
  /** with --json, a line for stderr of what `human` says beyond the data (the data printed is exactly the API's) */
  jsonNote?: string;
}

type Command = (run: Run) => Promise<Printed>;

const str = (run: Run, name: string): string | undefined => {
  const v = run.options[name];
  return typeof v === 'string' ? v : undefined;
};

function required(run: Run, name: string): string {
  const v = str(run, name);
  if (v === undefined) throw new UsageError(`--${name} is required`);
  return v;
}

function license(data: unknown, what: string): Printed {
  return { data, human: `${what}\n${licenseBlock(data as License)}` };
}

/** ?limit=&cursor=(&more) from the options, checked here so a typo is a usage error. */
function pageQuery(run: Run, cursor: string | null, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams(extra);
  const limit = str(run, 'limit');
  if (limit !== undefined) {
    if (wholeNumberOf(limit, 1) === null || Number(limit) > 500) throw new UsageError('--limit must be a whole number from 1 to 500');
    query.set('limit', limit);
  }
  if (cursor !== null) query.set('cursor', cursor);
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}

/** One page, or with --all every page following the cursors: {items, nextCursor}. */
async function pages<T, P extends Page<T> = Page<T>>(run: Run, path: string, extra: Record<string, string> = {}): Promise<P> {
  if (run.options.all === true && str(run, 'cursor') !== undefined) throw new UsageError('give --cursor or --all, not both');
  let cursor = str(run, 'cursor') ?? null;
  const items: T[] = [];
  for (;;) {
    const page = await run.api.call<P>('GET', `${path}${pageQuery(run, cursor, extra)}`);
    if (run.options.all !== true) return page;
    items.push(...page.items);
    // the last page's other fields (the ledger's totals) with every page's items
    if (page.nextCursor === null) return { ...page, items, nextCursor: null };
    cursor = page.nextCursor;
  }
}

/** How many were listed, and the command of the next page: `next` with its filters, then the --limit given and the cursor. */
function pageFooter(run: Run, page: Page<unknown>, what: string, next: string): string {
  const count = `${page.items.length} ${what}${page.items.length === 1 ? '' : 's'}`;
  const limit = str(run, 'limit');
  return page.nextCursor === null ? `(${count})\n`
    : `(${count}; next page: ${next}${limit === undefined ? '' : ` --limit ${limit}`} --cursor ${page.nextCursor})\n`;
}

/** set-limits' options and the limits they set (the License's rateLimits). */
const LIMIT_OPTIONS: Record<string, string> = {
  'get-token': 'getToken', 'sign-token': 'signToken', validate: 'validate', 'check-quota': 'checkQuota',
};

export const commands: Record<string, Command> = {
  async create(run) {
    const quota = wholeNumberOf(required(run, 'quota'));
    if (quota === null) throw new UsageError('--quota must be a whole number from 0 to 10^12');
    const expiryDate = expiryOf(required(run, 'expiry'));
    if (expiryDate === null) throw new UsageError('--expiry must be YYYY-MM-DD or an RFC 3339 date-time');
    const body: Record<string, unknown> = {
      organizationName: required(run, 'organization'),
      totalQuota: quota,
      expiryDate,
      isActive: run.options.inactive !== true,
      domains: domainsOf(str(run, 'domains') ?? '', ','),
    };
    if (str(run, 'key') !== undefined) body.licenseKey = str(run, 'key');
    body.password = await passwordFrom(run.options);
    const created = await run.api.answer('POST', '/admin/v1/licenses', body);
    return { ...license(created.data, 'Created:'), warnings: created.warnings.map((w) => w.message) };
  },

  async show(run) {
    const data = await run.api.call('GET', licensePath(run.args.key as string));
    return { data, human: licenseBlock(data as License) };
  },

  async list(run) {
    const page = await pages<License>(run, '/admin/v1/licenses');
    return { data: page, human: licenseTable(page.items) + pageFooter(run, page, 'license', 'licensectl list') };
  },

  async 'add-quota'(run) {
    const add = wholeNumberOf(run.args.n as string, 1);
    if (add === null) throw new UsageError('<n> must be a whole number from 1 to 10^12');
    const key = str(run, 'idempotency-key');
    const expires = str(run, 'expires');
    const expiresAt = expires === undefined ? undefined : expiryOf(expires);
    if (expiresAt === null) throw new UsageError('--expires must be YYYY-MM-DD or an RFC 3339 date-time');
    const body = { add, ...(expiresAt === undefined ? {} : { expiresAt }), ...(str(run, 'note') === undefined ? {} : { note: str(run, 'note') }) };
    const purchase = await run.api.answer('POST', licensePath(run.args.key as string, '/quota'), body, key === undefined ? {} : { 'idempotency-key': key });
    if (!purchase.replayed) return license(purchase.data, `Added ${add}:`);
    // a retry of a purchase credited before credits nothing: say so, not "Added"
    const already = `already credited: the purchase with idempotency key "${key ?? ''}" was credited before; nothing added now`;
    return { ...license(purchase.data, `Already credited (idempotency key "${key ?? ''}"): nothing added now. The license:`), jsonNote: already };
  },

  async activate(run) {
    return license(await run.api.call('PATCH', licensePath(run.args.key as string), { isActive: true }), 'Activated:');
  },

  async deactivate(run) {
    return license(await run.api.call('PATCH', licensePath(run.args.key as string), { isActive: false }), 'Deactivated:');
  },

  async 'set-domains'(run) {
    const domains = domainsOf(run.args.domains as string, ',');
    return license(await run.api.call('PATCH', licensePath(run.args.key as string), { domains }), 'Domains set:');
  },

  async 'set-password'(run) {
    const password = await passwordFrom(run.options);
    const data = await run.api.call('PATCH', licensePath(run.args.key as string), { password });
    return { data, human: `Password changed for ${(data as License).licenseKey}; its access tokens no longer work.\n` };
  },

  async 'set-webhook'(run) {
    const url = run.args.url as string;
    const o = run.options;
    const wantsSecret = typeof o.secret === 'string' || o['secret-stdin'] === true || o['ask-secret'] === true;
    if (url === '' && wantsSecret) throw new UsageError('"" removes the webhook: give no secret with it');
    const body: Record<string, unknown> = { webhookUrl: url === '' ? null : url };
    if (wantsSecret) body.webhookSecret = await hiddenValueFrom(o, 'secret');
    return license(await run.api.call('PATCH', licensePath(run.args.key as string), body), url === '' ? 'Webhook removed:' : 'Webhook set:');
  },

  async 'set-releases'(run) {
    const releasesPerDay = wholeNumberOf(run.args.n as string);
    if (releasesPerDay === null || releasesPerDay > 1e6) throw new UsageError('<n> must be a whole number from 0 to 10^6');
    return license(await run.api.call('PATCH', licensePath(run.args.key as string), { releasesPerDay }), 'Releases a day set:');
  },

  async 'set-limits'(run) {
    // the option of each limit, by the admin API's name: a limit not given keeps its value
    const rateLimits: Record<string, number | null> = {};
    for (const [option, field] of Object.entries(LIMIT_OPTIONS)) {
      const text = str(run, option);
      if (text === undefined) continue;
      const limit = rateLimitOf(text);
      if (limit === undefined) throw new UsageError(`--${option} must be a whole number from 0 to 10^9, or "default"`);
      rateLimits[field] = limit;
    }
    if (Object.keys(rateLimits).length === 0) throw new UsageError(`give at least one of ${Object.keys(LIMIT_OPTIONS).map((o) => `--${o}`).join(', ')}`);
    return license(await run.api.call('PATCH', licensePath(run.args.key as string), { rateLimits }), 'Limits set:');
  },

  async tokens(run) {
    const status = str(run, 'status');
    if (status !== undefined && !['issued', 'used', 'expired'].includes(status)) throw new UsageError('--status must be issued, used or expired');
    const key = run.args.key as string;
    const page = await pages<IssuedToken>(run, licensePath(key, '/tokens'), status === undefined ? {} : { status });
    return { data: page, human: tokenTable(page.items) + pageFooter(run, page, 'token', `licensectl tokens ${key}${status === undefined ? '' : ` --status ${status}`}`) };
  },

  async ledger(run) {
    const key = run.args.key as string;
    const page = await pages<LedgerLine, LedgerPage>(run, licensePath(key, '/ledger'));
    return { data: page, human: ledgerTable(page) + pageFooter(run, page, 'line', `licensectl ledger ${key}`) };
  },

  async audit(run) {
    const filter: Record<string, string> = {};
    const license = str(run, 'license');
    if (license !== undefined) filter.licenseKey = license;
    const since = str(run, 'since');
    if (since !== undefined) {
      const instant = sinceOf(since);
      if (instant === null) throw new UsageError('--since must be YYYY-MM-DD or an RFC 3339 date-time');
      filter.since = instant;
    }
    const page = await pages<AuditRecord>(run, '/admin/v1/audit', filter);
    // the next page's command repeats the filters
    const again = ['licensectl audit', ...(license === undefined ? [] : [`--license ${license}`]), ...(since === undefined ? [] : [`--since ${since}`])];
    return { data: page, human: auditTable(page.items) + pageFooter(run, page, 'change', again.join(' ')) };
  },
};
