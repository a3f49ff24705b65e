import t from 'tap';
import { EVENT_SEPARATOR } from '../../src/redis/fields.js';
import type { UsageEvent } from '../../src/usage/events.js';
import { newTokenId } from '../../src/tokens/tokenId.js';
import { dayOf } from '../../src/usage/partitions.js';
import { persistEvents } from '../../src/usage/persist.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// A license's redemptions per UTC day (sql/014_open_usage_day.sql): its latest day is counted
// on its row, and a day reaches license_usage_days when redemptions of a later one are
// written, or at once when its redemptions come late (a batch of an earlier day) or with
// another day's (a batch spanning midnight). The admin's ledger shows each day's whole
// count, whichever way it was kept, and replays and concurrent batches count once.

const DAY = 86_400_000;
const HOUR = 3_600_000;

const used = (firmaId: string, atMs: number, tokenId = newTokenId(atMs)): UsageEvent => ({
  stream: 's', id: '0-1', fields: [], kind: 'used',
  values: ['1', tokenId, firmaId, '0', String(atMs), String(atMs - 1000)].join(EVENT_SEPARATOR),
});
const times = (n: number, atMs: number) => Array.from({ length: n }, (_, i) => atMs + i);
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The admin ledger's days: date -> units spent (a spend line's amount is negative). */
async function ledgerDays(h: Harness, licenseKey: string): Promise<Record<string, number>> {
  const res = await h.admin('GET', `/admin/v1/licenses/${licenseKey}/ledger?limit=500`);
  if (res.status !== 200) throw new Error(`ledger: ${res.status}`);
  const out: Record<string, number> = {};
  for (const line of res.body.data.items as { kind: string; day: string | null; amount: number }[]) {
    if (line.kind === 'spend' && line.day !== null) out[line.day] = -line.amount;
  }
  return out;
}

t.test('a license\'s days: the latest on its row, the earlier in the table, every count in the ledger', async (t) => {
  const h = await startHarness(t, 'usage-days');
  const lic = await h.createLicense({ totalQuota: 1000 });
  const stored = async () => {
    const [row] = await h.sql`select usage_day::text as day, usage_day_redeemed::int as n, used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
    const closed = await h.sql`select day::text as day, redeemed::int as n from license_usage_days where firma_id = ${lic.firmaId} order by day`;
    return { row, closed: Object.fromEntries(closed.map((r) => [r.day as string, r.n as number])) };
  };
  const d0 = dayOf(Date.now()) - 3 * DAY;
  const [day0, day1, day2] = [iso(d0), iso(d0 + DAY), iso(d0 + 2 * DAY)];

  await persistEvents(h.sql, times(2, d0 + HOUR).map((at) => used(lic.firmaId, at)));
  t.same(await stored(), { row: { day: day0, n: 2, used: 2 }, closed: {} }, 'the first day: on the row alone');

  // a batch spanning midnight: both its days go to the table at once, and the row keeps its day
  await persistEvents(h.sql, [used(lic.firmaId, d0 + 2 * HOUR), ...times(3, d0 + DAY + HOUR).map((at) => used(lic.firmaId, at))]);
  t.same(await stored(), { row: { day: day0, n: 2, used: 6 }, closed: { [day0]: 1, [day1]: 3 } }, 'a batch of two days: both to the table');

  // a batch of a later day: the row moves on, closing the day it held
  await persistEvents(h.sql, times(2, d0 + DAY + 2 * HOUR).map((at) => used(lic.firmaId, at)));
  t.same(await stored(), { row: { day: day1, n: 2, used: 8 }, closed: { [day0]: 3, [day1]: 3 } }, 'a later day: the row moves on, its day closed');

  // late: redemptions of a day the row has left
  const late = times(2, d0 + 5 * HOUR).map((at) => used(lic.firmaId, at));
  await persistEvents(h.sql, late);
  await persistEvents(h.sql, late); // a replay: the worker died before its acknowledgement
  t.same(await stored(), { row: { day: day1, n: 2, used: 10 }, closed: { [day0]: 5, [day1]: 3 } }, 'a late day: to the table, once');
  t.same(await ledgerDays(h, lic.licenseKey), { [day0]: 5, [day1]: 5 }, 'the ledger: both days whole');

  // two batches of the license at once, one of the row's day and one of the next: each is
  // judged on the row as the other left it, so both add up whichever commits first
  for (let round = 0; round < 5; round++) {
    await Promise.all([
      persistEvents(h.sql, times(4, d0 + DAY + 2 * HOUR + round * 10).map((at) => used(lic.firmaId, at))),
      persistEvents(h.sql, times(7, d0 + 2 * DAY + HOUR + round * 10).map((at) => used(lic.firmaId, at))),
    ]);
  }
  const days = await ledgerDays(h, lic.licenseKey);
  t.same(days, { [day0]: 5, [day1]: 5 + 5 * 4, [day2]: 5 * 7 }, 'concurrent batches: every redemption in its day, once');
  const { row } = await stored();
  t.equal(row?.used, Object.values(days).reduce((a, b) => a + b, 0), 'the days add up to the used quota');
  t.equal(row?.day, day2, 'the row holds the latest day');
});

t.test('a day\'s line is dated at the end of its day; today\'s at the answer\'s time, the newest line, never in the future', async (t) => {
  const h = await startHarness(t, 'usage-days-at');
  const lic = await h.createLicense({ totalQuota: 1000 });
  const today = dayOf(Date.now());
  await persistEvents(h.sql, [used(lic.firmaId, today - DAY + HOUR), used(lic.firmaId, Date.now() - 1000)]);
  const before = Date.now();
  // a purchase after today's redemptions: today's line still comes first, the purchase below it
  await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 5 });
  const res = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}/ledger?limit=500`);
  const after = Date.now();
  const items = res.body.data.items as { kind: string; day: string | null; at: string }[];
  const todays = items.find((l) => l.day === iso(today));
  const yesterdays = items.find((l) => l.day === iso(today - DAY));
  t.equal(yesterdays?.at, new Date(today - 1).toISOString(), 'a past day: the end of that day');
  const at = Date.parse(todays?.at ?? '');
  t.ok(at >= before && at <= after + 5, `today: the time of the answer (${todays?.at}), not the end of the day`);
  t.same(items.map((l) => l.kind), ['spend', 'purchase', 'purchase', 'spend'], 'today first, then the purchase and the license\'s first package, then yesterday');
  const page = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}/ledger?limit=1`);
  t.equal(page.body.data.items[0]?.day, iso(today), 'a page of one: today');
  const next = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}/ledger?limit=500&cursor=${encodeURIComponent(page.body.data.nextCursor)}`);
  t.notOk((next.body.data.items as { day: string | null }[]).some((l) => l.day === iso(today)), 'the next pages do not repeat it');
});
