import { Type } from '@sinclair/typebox';
import { reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { Ledger, type LedgerCursor, type LedgerLine } from '../licenses/ledger.js';
import { packageFigures } from '../licenses/licenseRow.js';
import { errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf, LedgerTotals, Timestamp } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import { holderPageCases, holderPageRoute } from './holderReads.js';
import { decodeCursor as decodeParts, encodeCursor as encodeParts, pageOf, pageQueryFields } from './paging.js';
import { authReplies } from './replies.js';
import { LicenseKey } from './schemas.js';

// GET /api/License/ledger/{licenseKey}: the license holder's view of the ledger
// (docs/api.md#packages-and-the-ledger), behind the same gate as history (./holderReads.ts):
// the packages with their expiry, the entries that changed the balance and the totals. Only
// what concerns the holder's own balance: never who made an entry nor a purchase's note (an
// admin's name and the seller's own text), and no day's spending (history lists each one).

const LedgerQuery = Type.Object({ ...pageQueryFields });

/** What encodeCursor made: an entry's time in microseconds and its reference ("e" and its zero-padded id). */
const CURSOR = /^(\d{1,17})\|(e\d{19})$/;

function encodeCursor(c: LedgerCursor): string {
  return encodeParts(c.atMicros, c.ref);
}

/** The cursor, or null unless it is exactly one this server hands out (the same text encoded again). */
function decodeCursor(text: string): LedgerCursor | null {
  const parts = decodeParts(text, CURSOR);
  if (parts === null) return null;
  const [atMicros, ref] = parts as [string, string];
  const cursor = { atMicros, ref };
  return encodeCursor(cursor) === text ? cursor : null;
}

const closed = { additionalProperties: false } as const;

const PackageSchema = Type.Object({
  id: Type.Integer({ minimum: 1, description: 'the package\'s number: 1, 2, 3... in the order of purchase' }),
  amount: Type.Integer({ minimum: 1, description: 'units bought' }),
  used: Type.Integer({ minimum: 0, description: 'units spent from it' }),
  remaining: Type.Integer({ minimum: 0, description: 'units left: amount - used - forfeited (0 once it has forfeited)' }),
  forfeited: Type.Integer({ minimum: 0, description: 'units it left unspent when it expired' }),
  expiresAt: { ...Timestamp, description: 'when its units left are forfeited' },
  createdAt: Timestamp,
}, closed);

const EntrySchema = Type.Object({
  kind: Type.Union(['purchase', 'forfeit', 'release', 'correction'].map((k) => Type.Literal(k)), {
    description: 'purchase: a package bought; forfeit: what a package left when it expired; release: a unit given back after a '
      + 'failed signing; correction: an adjustment (the opening balance of a license older than packages)',
  }),
  at: Timestamp,
  amount: Type.Integer({ description: 'what it adds to the balance: a forfeit is negative' }),
  packageId: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'the package the entry concerns' }),
}, closed);


const LedgerPage = Type.Object({
  success: Type.Literal(true),
  data: Type.Object({
    packages: Type.Array(PackageSchema, { description: 'every package of the license, newest first (on every page)' }),
    items: Type.Array(EntrySchema, { description: 'one page of the entries, newest first' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'null on the last page' }),
    totals: LedgerTotals,
  }, closed),
}, closed);

const example = {
  success: true,
  data: {
    packages: [
      { id: 2, amount: 1000, used: 162, remaining: 838, forfeited: 0, expiresAt: '2027-11-24T00:00:00.000Z', createdAt: '2026-11-24T09:30:00.000Z' },
      { id: 1, amount: 100, used: 88, remaining: 0, forfeited: 12, expiresAt: '2026-11-25T00:00:00.000Z', createdAt: '2026-05-02T14:05:00.000Z' },
    ],
    items: [
      { kind: 'forfeit', at: '2026-11-25T00:00:00.120Z', amount: -12, packageId: 1 },
      { kind: 'purchase', at: '2026-11-24T09:30:00.000Z', amount: 1000, packageId: 2 },
    ],
    nextCursor: encodeCursor({ atMicros: String(Date.parse('2026-11-24T09:30:00.000Z') * 1000), ref: `e${'2'.padStart(19, '0')}` }),
    totals: { purchased: 1100, corrected: 0, forfeited: 12, released: 0, redeemed: 250, totalQuota: 1088, usedQuota: 250 },
  },
};

const doc: RouteDoc = {
  summary: 'The license\'s packages and the entries of its ledger, newest first',
  description: 'Every package with its expiry, what it holds and what it forfeited; the entries that changed the balance '
    + '(purchases, forfeits, releases, corrections) in pages with limit and cursor; and the totals, which sum to the license\'s '
    + 'figures. Neither who made an entry nor a purchase\'s note is shown. Needs an access token of that very license; shares '
    + 'history\'s limit.',
  tags: ['public'],
  auth: 'accessToken',
  params: { licenseKey: { description: 'the license key, a UUID (any case)', schema: LicenseKey } },
  query: LedgerQuery,
  responses: {
    200: {
      description: 'the packages, a page of entries and the totals',
      schema: LedgerPage,
      examples: [
        { summary: 'a forfeit and a purchase, with more to come', value: example },
        {
          summary: 'a license without packages',
          value: {
            success: true,
            data: { packages: [], items: [], nextCursor: null, totals: { purchased: 0, corrected: 0, forfeited: 0, released: 0, redeemed: 0, totalQuota: 0, usedQuota: 0 } },
          },
        },
      ],
    },
    ...errorResponses(codedErrorOf, holderPageCases(
      'the access token belongs to another license, or no license has the key',
      'too many history and ledger requests for this license (RATE_HISTORY_PER_MIN; answered after about a second unless the window ends sooner)',
    )),
  },
};

/** An entry as the holder sees it: no actor, no note, no balance (it mixes in the worker's lag; the totals say it whole). */
function entryData(l: LedgerLine): Record<string, unknown> {
  return { kind: l.kind, at: l.at.toISOString(), amount: l.amount, packageId: l.packageNo };
}

/** GET /api/License/ledger/{licenseKey}: the license's packages, ledger entries (newest first) and totals. */
export function holderLedgerRoute(ctx: RouteContext): Route {
  const ledger = new Ledger(ctx.sql);
  return holderPageRoute(ctx, {
    path: '/api/license/ledger/:licenseKey',
    doc,
    query: LedgerQuery,
    decodeCursor,
    read: async (firmaId, { pageSize, cursor }) => {
      const [rows, totals, license] = await Promise.all([
        ledger.lines(firmaId, pageSize + 1, cursor, 'entries'), ledger.totals(firmaId), ctx.store.byFirmaId(firmaId),
      ]);
      // the access token's license always exists (licenses are never removed); the gate answers 401 if it did not
      if (totals === null || license === null) return authReplies.INVALID_TOKEN;
      const page = pageOf(rows, pageSize, (last) => encodeCursor({ atMicros: last.atMicros, ref: last.ref }));
      // a package as the holder sees it: no note (the seller's own text)
      const packages = [...license.packages].reverse().map(packageFigures);
      return reply(200, { success: true, data: { packages, items: page.items.map(entryData), nextCursor: page.nextCursor, totals } });
    },
  });
}
