import { Type, type TSchema } from '@sinclair/typebox';
import { reply } from '../../http/reply.js';
import type { Route } from '../../http/route.js';
import { Ledger, type LedgerLine } from '../../licenses/ledger.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf, LedgerTotals, Timestamp } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { encodeCursor, pageOf, pageQueryFields } from '../paging.js';
import { codedErrors } from '../replies.js';
import { adminReplies, type AdminGuard } from './common.js';
import { licenseKeyParam as keyParam, notFound, unauthorized } from './docs.js';
import { adminQueryParser } from './parsers.js';
import { licensePage, PAGING_EXPECTED, pagingCases } from './v1_licenses_list.js';

const LedgerQuery = Type.Object({ ...pageQueryFields });
const parseQuery = adminQueryParser(LedgerQuery, PAGING_EXPECTED);

/** A line's reference in a cursor: an entry's "e" and zero-padded id, a day's "s" and date. */
const LINE_REF = /^(?:e\d{19}|s\d{4}-\d\d-\d\d)$/;

const closed = { additionalProperties: false } as const;
const nullable = (schema: TSchema, description: string) => Type.Union([schema, Type.Null()], { description });

const LedgerLineSchema = Type.Object({
  kind: Type.Union(['purchase', 'forfeit', 'release', 'correction', 'spend'].map((k) => Type.Literal(k)), {
    description: 'purchase: a package bought; forfeit: what a package left when it expired; release: a unit given back after a '
      + 'failed signing; correction: an adjustment (the opening balance of a license older than packages); spend: a day\'s '
      + 'redemptions, summed',
  }),
  at: { ...Timestamp, description: 'when: an entry\'s time; a day\'s spending: the end of that UTC day, for the current day the time of the answer (the day so far)' },
  amount: Type.Integer({ description: 'what it adds to the balance: a forfeit and a day\'s spending are negative' }),
  balanceAfter: nullable(Type.Integer(), 'totalQuota - usedQuota once the entry was written, as Postgres counted them; null for a day\'s spending'),
  packageId: nullable(Type.Integer({ minimum: 1 }), 'the package the entry concerns; null for a day\'s spending'),
  actor: nullable(Type.String(), 'the admin\'s name (ADMIN_TOKENS), "system" (a forfeit), "holder" (a release), "migration"; null for a day\'s spending'),
  note: nullable(Type.String(), 'the purchase\'s note, a release\'s reason'),
  day: nullable(Type.String({ format: 'date' }), 'a day\'s spending: the UTC day; null for an entry'),
}, closed);


const LedgerAnswer = Type.Object({
  success: Type.Literal(true),
  data: Type.Object({ items: Type.Array(LedgerLineSchema), nextCursor: Type.Union([Type.String({ minLength: 1 }), Type.Null()]), totals: LedgerTotals }, closed),
}, closed);

const example = {
  success: true,
  data: {
    items: [
      { kind: 'spend', at: '2026-11-25T23:59:59.999Z', amount: -37, balanceAfter: null, packageId: null, actor: null, note: null, day: '2026-11-25' },
      { kind: 'forfeit', at: '2026-11-25T00:00:00.120Z', amount: -12, balanceAfter: 951, packageId: 1, actor: 'system', note: null, day: null },
      { kind: 'purchase', at: '2026-11-24T09:30:00.000Z', amount: 1000, balanceAfter: 963, packageId: 2, actor: 'alice', note: 'Fatura 2026/118', day: null },
    ],
    nextCursor: null,
    totals: { purchased: 1100, corrected: 0, forfeited: 12, released: 0, redeemed: 174, totalQuota: 1088, usedQuota: 174 },
  },
};

const doc: RouteDoc = {
  summary: 'A license\'s ledger: every change to its balance, and its spending by day, newest first',
  description: 'Entries are append-only: purchases, forfeits, releases and corrections, each with the balance after it, the '
    + 'package and who made it. Spending stays in the redemption rows and shows here as one line per UTC day. The totals '
    + 'always sum to the license\'s figures: totalQuota = purchased + corrected - forfeited and usedQuota = redeemed - released. '
    + 'Keyset pages as the license list.',
  tags: ['admin'],
  auth: 'admin',
  params: keyParam,
  query: LedgerQuery,
  responses: {
    200: { description: 'a page of the ledger, with its totals', schema: LedgerAnswer, examples: [{ summary: 'a forfeit and a purchase', value: example }] },
    ...errorResponses(codedErrorOf, [unauthorized, notFound, ...pagingCases]),
  },
};

function lineData(l: LedgerLine): Record<string, unknown> {
  return {
    kind: l.kind, at: l.at.toISOString(), amount: l.amount, balanceAfter: l.balanceAfter, packageId: l.packageNo, actor: l.actor,
    note: l.note, day: l.day,
  };
}

/** GET /admin/v1/licenses/{licenseKey}/ledger?limit=&cursor=: the license's ledger, newest first, with its totals. */
export function licenseLedgerRoute(ctx: RouteContext, guard: AdminGuard): Route {
  const ledger = new Ledger(ctx.sql);
  return {
    method: 'get', path: '/admin/v1/licenses/:licenseKey/ledger', errors: codedErrors, needsAuthorization: true, needsQuery: true,
    noStore: true, doc,
    handler: guard(async (req) => {
      const asked = await licensePage(ctx, req, parseQuery, LINE_REF);
      if ('status' in asked) return asked;
      const { limit, firmaId } = asked;
      const after = asked.after && { atMicros: asked.after[0], ref: asked.after[1] };
      const [rows, totals] = await Promise.all([ledger.lines(firmaId, limit + 1, after), ledger.totals(firmaId)]);
      if (totals === null) return adminReplies.LICENSE_NOT_FOUND;
      const page = pageOf(rows, limit, (last) => encodeCursor(last.atMicros, last.ref));
      return reply(200, { success: true, data: { items: page.items.map(lineData), nextCursor: page.nextCursor, totals } });
    }),
  };
}
