import t from 'tap';
import { EVENT_SEPARATOR } from '../../src/redis/fields.js';
import type { UsageEvent } from '../../src/usage/events.js';
import { newTokenId } from '../../src/tokens/tokenId.js';
import { persistEvents } from '../../src/usage/persist.js';
import { ADMIN_TOKEN, startHarness, type Harness, type TestLicense } from '../helpers/harness.js';
import { waitForLockWait } from '../helpers/wait.js';

// The spends of a license's current package (sql/015_open_package.sql): a batch that spent one
// package counts it on the license's row, and the package's own row gets the count when a
// later batch spends another package, or at once when a batch spends several. Readers see
// license_packages, the sum, which must be exact whatever the order: switches back and forth,
// releases of a unit whose spend is still on the license's row, replays, concurrent batches.
// The ledger's balance after a forfeit or a release counts what changed the license while
// its batch waited for the license's row.

const HOUR = 3_600_000;

let at = Date.now() - HOUR;
const used = (firmaId: string, packageNo: number, tokenId = newTokenId(at)): UsageEvent => {
  at += 1;
  return {
    stream: 's', id: '0-1', fields: [], kind: 'used',
    values: [String(packageNo), tokenId, firmaId, '0', String(at), String(at - 1000)].join(EVENT_SEPARATOR),
  };
};
const spends = (firmaId: string, packageNo: number, n: number) => Array.from({ length: n }, () => used(firmaId, packageNo));
const releaseOf = (event: UsageEvent & { kind: 'used' }, packageNo: number): UsageEvent => {
  const [, tokenId, firmaId] = event.values.split(EVENT_SEPARATOR);
  at += 1;
  return { stream: 's', id: '0-2', fields: [], kind: 'released', values: [tokenId, firmaId, String(packageNo), String(at), 'kart'].join(EVENT_SEPARATOR) };
};

const forfeitOf = (firmaId: string, packageNo: number, units: number): UsageEvent => {
  at += 1;
  return { stream: 's', id: '0-3', fields: [], kind: 'forfeited', values: [firmaId, String(packageNo), String(units), String(at)].join(EVENT_SEPARATOR) };
};

async function withPackages(h: Harness, sizes: number[]): Promise<TestLicense> {
  const lic = await h.createLicense({ totalQuota: sizes[0] as number });
  for (const add of sizes.slice(1)) {
    const res = await h.request('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`,
      { add, expiresAt: new Date(Date.now() + 2 * HOUR).toISOString() }, { authorization: `Bearer ${ADMIN_TOKEN}` });
    if (res.status !== 200) throw new Error(`quota: ${res.status} ${res.text}`);
  }
  return lic;
}

/** Each package's used count as readers see it, and the license's used quota. */
async function books(h: Harness, firmaId: string): Promise<{ packages: number[]; used: number }> {
  const packages = await h.sql`select used::int as used from license_packages where firma_id = ${firmaId} order by package_no`;
  const [lic] = await h.sql`select used_quota::int as used from licenses where firma_id = ${firmaId}`;
  return { packages: packages.map((p) => p.used as number), used: lic?.used as number };
}

const h = await startHarness(t, 'usage-open-package');

t.test('one package at a time, switching, several in a batch, replays: every spend in its package once', async (t) => {
  const lic = await withPackages(h, [100, 100, 100]);
  const first = spends(lic.firmaId, 1, 3);
  await persistEvents(h.sql, first);
  t.same(await books(h, lic.firmaId), { packages: [3, 0, 0], used: 3 }, 'package 1: 3');
  const [open] = await h.sql`select open_package_no as no, open_package_used::int as n from licenses where firma_id = ${lic.firmaId}`;
  t.same(open, { no: 1, n: 3 }, 'counted on the license\'s row');

  await persistEvents(h.sql, [...spends(lic.firmaId, 1, 1), ...spends(lic.firmaId, 2, 2)]);
  t.same(await books(h, lic.firmaId), { packages: [4, 2, 0], used: 6 }, 'a batch of two packages');

  const second = spends(lic.firmaId, 2, 4);
  await persistEvents(h.sql, second);
  t.same(await books(h, lic.firmaId), { packages: [4, 6, 0], used: 10 }, 'package 2 opened, package 1 closed');

  await persistEvents(h.sql, spends(lic.firmaId, 1, 2));
  await persistEvents(h.sql, spends(lic.firmaId, 3, 5));
  t.same(await books(h, lic.firmaId), { packages: [6, 6, 5], used: 17 }, 'back to package 1, then on to 3');

  await persistEvents(h.sql, first);
  await persistEvents(h.sql, second);
  await persistEvents(h.sql, [...first, ...second]);
  t.same(await books(h, lic.firmaId), { packages: [6, 6, 5], used: 17 }, 'replays change nothing');
  const [rows] = await h.sql`select coalesce(sum(used), 0)::int as used from license_package_rows where firma_id = ${lic.firmaId}`;
  t.ok((rows?.used as number) < 17, 'some of it still only on the license\'s row (the test would not see a fold otherwise)');
});

t.test('a release of a unit whose spend is still on the license\'s row', async (t) => {
  const lic = await withPackages(h, [10]);
  const events = spends(lic.firmaId, 1, 2);
  await persistEvents(h.sql, events);
  await persistEvents(h.sql, [releaseOf(events[0] as UsageEvent & { kind: 'used' }, 1)]);
  t.same(await books(h, lic.firmaId), { packages: [1], used: 1 }, 'package 1: 2 spent, 1 given back');
  // a spend and its release in one batch, and both replayed
  const more = spends(lic.firmaId, 1, 1);
  const batch = [...more, releaseOf(more[0] as UsageEvent & { kind: 'used' }, 1)];
  await persistEvents(h.sql, batch);
  await persistEvents(h.sql, batch);
  t.same(await books(h, lic.firmaId), { packages: [1], used: 1 }, 'a spend and its release in one batch: nothing left of either');
  const ledger = await h.sql`select kind, amount::int as amount from license_ledger where firma_id = ${lic.firmaId} and kind = 'release'`;
  t.equal(ledger.length, 2, 'two release entries');
});

t.test('a release written before its spend (another worker\'s batch, or the spend pending under a stopped one): both counted', async (t) => {
  const lic = await withPackages(h, [10]);
  const spend = used(lic.firmaId, 1);
  const release = releaseOf(spend as UsageEvent & { kind: 'used' }, 1);
  // the license's first unit: Postgres's used count goes below zero until the spend arrives
  await persistEvents(h.sql, [release]);
  await persistEvents(h.sql, [spend]);
  t.same(await books(h, lic.firmaId), { packages: [0], used: 0 }, 'the unit spent and given back');
  const [row] = await h.sql`select released_quota::int as released from licenses where firma_id = ${lic.firmaId}`;
  t.equal(row?.released, 1, 'one release counted');
  const releases = await h.sql`select token_id from token_releases where firma_id = ${lic.firmaId}`;
  t.equal(releases.length, 1, 'its release row');
  const ledger = await h.sql`select kind from license_ledger where firma_id = ${lic.firmaId} and kind = 'release'`;
  t.equal(ledger.length, 1, 'its ledger entry');
});

t.test('a forfeit replayed in a batch beside a new one: the new one\'s balance after counts the first once', async (t) => {
  const lic = await withPackages(h, [10, 20]);
  const first = forfeitOf(lic.firmaId, 1, 10);
  await persistEvents(h.sql, [first]);
  // the first again (its acknowledgement lost, or claimed with another consumer's entries), twice
  await persistEvents(h.sql, [first, first, forfeitOf(lic.firmaId, 2, 20)]);
  const entries = await h.sql`select package_no, amount::int as amount, balance_after::int as balance from license_ledger
    where firma_id = ${lic.firmaId} and kind = 'forfeit' order by at`;
  t.same(entries.map((e) => [e.package_no, e.amount, e.balance]), [[1, -10, 20], [2, -20, 0]], 'each forfeit once, balances 20 then 0');
  const [row] = await h.sql`select (total_quota - used_quota)::int as balance from licenses where firma_id = ${lic.firmaId}`;
  t.equal(row?.balance, 0, 'the license\'s balance is the last entry\'s');
});

t.test('concurrent batches of one license on two packages: every spend once', async (t) => {
  const lic = await withPackages(h, [1000, 1000]);
  for (let round = 0; round < 6; round++) {
    await Promise.all([
      persistEvents(h.sql, spends(lic.firmaId, 1, 3)),
      persistEvents(h.sql, spends(lic.firmaId, 2, 5)),
      persistEvents(h.sql, [...spends(lic.firmaId, 1, 1), ...spends(lic.firmaId, 2, 1)]),
    ]);
  }
  t.same(await books(h, lic.firmaId), { packages: [6 * 4, 6 * 6], used: 6 * 10 }, 'package 1: 24, package 2: 36');
});

t.test('a forfeit or a release written while a change of the license commits: its balance after counts the change', async (t) => {
  for (const kind of ['release', 'forfeit'] as const) {
    const lic = await withPackages(h, [10]);
    const events = spends(lic.firmaId, 1, 2);
    await persistEvents(h.sql, events);
    const entry = kind === 'release' ? releaseOf(events[0] as UsageEvent & { kind: 'used' }, 1) : forfeitOf(lic.firmaId, 1, 8);
    // an admin change of the license's total (as a purchase makes), committed while the batch waits for its row
    const admin = await h.sql.reserve();
    try {
      await admin`begin`;
      await admin`update licenses set total_quota = total_quota + 100 where firma_id = ${lic.firmaId}`;
      const writing = persistEvents(h.sql, [entry]);
      await waitForLockWait(admin, 'insert into token_issues');
      await admin`commit`;
      await writing;
    } finally {
      admin.release();
    }
    const [last] = await h.sql`select balance_after::int as balance from license_ledger where firma_id = ${lic.firmaId} and kind = ${kind}`;
    const [row] = await h.sql`select (total_quota - used_quota)::int as balance from licenses where firma_id = ${lic.firmaId}`;
    // 10 + 100 - 2 spent, then + 1 given back; or - 8 forfeited (what package 1 had left)
    t.same([last?.balance, row?.balance], kind === 'release' ? [109, 109] : [100, 100], `${kind}: the ledger's balance is the license's`);
  }
});
