import t from 'tap';
import { LIVE_COUNTS, startHarness, type Harness } from '../helpers/harness.js';
import { mintTokens, TokenSource } from '../helpers/tokens.js';
import { pollUntil, waitFor } from '../helpers/wait.js';
import { LOCAL_RECEIVERS, outboxOf, QUICK_WEBHOOKS, setWebhook, signatureValid, startReceiver, type Delivery } from '../helpers/webhooks.js';
import type { Asserts } from '../helpers/shapes.js';
import { WebhookOutbox } from '../../src/webhooks/outbox.js';
import { scanExpiring } from '../../src/webhooks/expiring.js';

// Webhooks end to end (docs/api.md#webhooks): quota spent through the public API makes the
// usage worker write quota.low and quota.exhausted once per crossing, license.expiring
// comes from the worker's scan, and every event reaches a local receiver signed, retried
// with backoff until it answers 2xx, never twice once delivered.

const SECRET = 'whsec-test-0123456789abcdef';

/** Redeems n sign tokens of the license through the public API, then waits until Postgres has them. */
async function spend(h: Harness, source: TokenSource, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await h.validate(await source.next());
    if (res.status !== 200) throw new Error(`validate: ${res.status} ${res.text}`);
  }
  await h.drainWorker();
}

/** Waits until every outbox row of the license is delivered (or failed), and there are `count` of them. */
async function settled(h: Harness, firmaId: string, count: number) {
  return pollUntil(() => outboxOf(h, firmaId), (rows) => rows.length === count && rows.every((r) => r.delivered_at || r.failed_at));
}

function checkSigned(t: Asserts, d: Delivery, secret = SECRET): void {
  t.ok(signatureValid(d, secret), `${d.body.type}: X-Webhook-Signature verifies with the secret`);
  t.notOk(signatureValid(d, `${secret}x`), 'and not with another secret');
  const ts = Number(d.headers['x-webhook-timestamp']);
  t.ok(Number.isInteger(ts) && Math.abs(ts - Date.now() / 1000) < 300, 'X-Webhook-Timestamp: Unix seconds, now');
  t.equal(d.headers['x-webhook-id'], d.body.id, 'X-Webhook-Id is the event id');
  t.equal(d.headers['content-type'], 'application/json');
  t.notMatch(d.raw, secret, 'the secret is not in the body');
}

t.test('webhooks', async (t) => {
  const h = await startHarness(t, 'webhooks', { ...LIVE_COUNTS, ...QUICK_WEBHOOKS, ...LOCAL_RECEIVERS, WEBHOOK_MAX_ATTEMPTS: '3' }, { logLevel: 'debug' });
  const receiver = await startReceiver(t);

  t.test('quota.low and quota.exhausted once per crossing, signed; a purchase re-arms quota.low', async (t) => {
    const lic = await h.createLicense({ totalQuota: 20 });
    await setWebhook(h, lic.licenseKey, `${receiver.url}/quota`, SECRET);
    const source = new TokenSource(h, lic);

    await spend(h, source, 17); // 3 of 20 left: above 10 %
    t.same(await outboxOf(h, lic.firmaId), [], 'above the threshold: no event');
    await spend(h, source, 1); // 2 left: 10 %
    const [low] = await settled(h, lic.firmaId, 1);
    t.equal(low?.type, 'quota.low');
    await spend(h, source, 1); // 1 left: past the threshold already, nothing new
    t.equal((await outboxOf(h, lic.firmaId)).length, 1, 'falling further below the threshold adds nothing');
    await spend(h, source, 1); // 0 left
    const rows = await settled(h, lic.firmaId, 2);
    t.same(rows.map((r) => r.type), ['quota.low', 'quota.exhausted']);
    t.ok(rows.every((r) => r.attempts === 1 && r.last_status === 200), 'each delivered on its first attempt');

    const got = receiver.to('/quota');
    t.same(got.map((d) => d.body.type), ['quota.low', 'quota.exhausted'], 'one of each arrived, in order');
    t.same(got.map((d) => d.body.id), rows.map((r) => r.id), 'with the ids of the outbox rows');
    for (const d of got) checkSigned(t, d);
    const [lowBody, exhaustedBody] = got.map((d) => d.body);
    t.match(lowBody, { type: 'quota.low', createdAt: /^\d{4}-\d\d-\d\dT/ });
    t.same(lowBody?.data, {
      licenseKey: lic.licenseKey, organizationName: 'Test A.Ş.', totalQuota: 20, usedQuota: 18, remainingQuota: 2,
      expiryDate: lowBody?.data.expiryDate, thresholdPercent: 10,
    });
    t.match(lowBody?.data.expiryDate, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    t.same(exhaustedBody?.data, {
      licenseKey: lic.licenseKey, organizationName: 'Test A.Ş.', totalQuota: 20, usedQuota: 20, remainingQuota: 0,
      expiryDate: lowBody?.data.expiryDate,
    });

    // a purchase that lifts the remaining quota above 10 % re-arms quota.low (and quota.exhausted)
    const bought = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 10 });
    t.equal(bought.status, 200);
    await spend(h, source, 6); // 4 of 30 left: above 10 %
    t.equal((await outboxOf(h, lic.firmaId)).length, 2, 'above the threshold again: nothing new');
    await spend(h, source, 1); // 3 of 30: 10 %
    const after = await settled(h, lic.firmaId, 3);
    t.same(after.map((r) => r.type), ['quota.low', 'quota.exhausted', 'quota.low']);
    const lows = receiver.to('/quota', 'quota.low');
    t.equal(lows.length, 2, 'a second quota.low arrived');
    t.not(lows[1]?.body.id, lows[0]?.body.id, 'as a new event');
    t.match(lows[1]?.body.data, { totalQuota: 30, usedQuota: 27, remainingQuota: 3 });
    t.equal(receiver.to('/quota').length, 3, 'no delivery twice');

    // a purchase that leaves it at or below 10 % does not re-arm quota.low; spending it is a new exhaustion
    await spend(h, source, 3); // 0 of 30
    await settled(h, lic.firmaId, 4);
    t.equal((await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 2 })).status, 200);
    await spend(h, source, 2); // 2 of 32 (6 %), then 0
    const last = await settled(h, lic.firmaId, 5);
    t.same(last.map((r) => r.type), ['quota.low', 'quota.exhausted', 'quota.low', 'quota.exhausted', 'quota.exhausted']);
    t.same(receiver.to('/quota').map((d) => d.body.type), last.map((r) => r.type), 'each arrived once');
    t.match(receiver.to('/quota')[4]?.body.data, { totalQuota: 32, usedQuota: 32, remainingQuota: 0 });
  });

  t.test('an expiring package: its forfeit is a crossing when it takes the quota back down, none while already below', async (t) => {
    // A: spent out, then a purchase re-arms both events, and its package expires unused: the
    // forfeit brings the total back to the one of the first crossing and the remaining quota to 0
    const a = await h.createLicense({ totalQuota: 10 });
    // B: at 10 % when its short package forfeits a unit: still below, never above since
    const b = await h.createLicense({ totalQuota: 1 });
    await setWebhook(h, a.licenseKey, `${receiver.url}/forfeit-a`, SECRET);
    await setWebhook(h, b.licenseKey, `${receiver.url}/forfeit-b`, SECRET);
    await spend(h, new TokenSource(h, a), 10);
    t.same((await settled(h, a.firmaId, 2)).map((r) => r.type).sort(), ['quota.exhausted', 'quota.low'], 'A: the first crossing');
    const { tokens } = await mintTokens(h, b, 18);

    const expiresAt = new Date(Date.now() + 5_000).toISOString();
    t.equal((await h.admin('POST', `/admin/v1/licenses/${a.licenseKey}/quota`, { add: 5, expiresAt })).body.data?.remainingQuota, 5, 'A: 5 of 15 left');
    t.equal((await h.admin('POST', `/admin/v1/licenses/${b.licenseKey}/quota`, { add: 19, expiresAt })).status, 200);
    for (const token of tokens) t.equal((await h.validate(token)).status, 200, 'B spends its short package first');
    await h.drainWorker();
    t.same((await settled(h, b.firmaId, 1)).map((r) => r.type), ['quota.low'], 'B: 2 of 20 left, quota.low');
    t.ok(Date.now() < Date.parse(expiresAt), 'all spent before the packages expired');

    // the forfeit sweep (every 2 s) forfeits A's 5 units and B's last one
    const totals = () => h.sql`select firma_id, total_quota::int as total, used_quota::int as used from licenses
      where firma_id in (${a.firmaId}, ${b.firmaId}) order by firma_id = ${b.firmaId}`;
    const after = await pollUntil(totals, (rows) => rows[0]?.total === 10 && rows[1]?.total === 19, { timeoutMs: 30_000, intervalMs: 200 });
    t.same(after.map((r) => [r.total, r.used]), [[10, 10], [19, 18]], 'the forfeits reached Postgres');
    const rowsA = await settled(h, a.firmaId, 4);
    t.same(rowsA.slice(2).map((r) => r.type).sort(), ['quota.exhausted', 'quota.low'], 'A: the forfeit crossed both again, and both were written');
    t.match(rowsA.slice(2).map((r) => r.payload), [{ totalQuota: 10, usedQuota: 10, remainingQuota: 0 }, { totalQuota: 10, usedQuota: 10, remainingQuota: 0 }]);
    t.equal(receiver.to('/forfeit-a').length, 4, 'A: four deliveries');
    t.same((await outboxOf(h, b.firmaId)).map((r) => r.type), ['quota.low'], 'B: no second quota.low');
    t.equal(receiver.to('/forfeit-b').length, 1, 'B: told once');
  });

  t.test('500 twice, then 200: delivered on the third attempt, once', async (t) => {
    const lic = await h.createLicense({ totalQuota: 1 });
    await setWebhook(h, lic.licenseKey, `${receiver.url}/flaky`, SECRET);
    const respond = receiver.respond;
    receiver.respond = (d) => (d.path === '/flaky' && d.nth <= 2 ? 500 : respond(d));
    t.teardown(() => { receiver.respond = respond; });
    await spend(h, new TokenSource(h, lic), 1); // 1 -> 0: quota.low and quota.exhausted together
    const rows = await settled(h, lic.firmaId, 2);
    t.same(rows.map((r) => r.type).sort(), ['quota.exhausted', 'quota.low']);
    for (const row of rows) {
      t.ok(row.delivered_at instanceof Date, `${row.type} delivered`);
      t.equal(row.attempts, 3, `${row.type}: three attempts recorded`);
      t.equal(row.last_status, 200);
      const tries = receiver.deliveries.filter((d) => d.body.id === row.id);
      t.same(tries.map((d) => d.nth), [1, 2, 3], `${row.type}: three requests, none after the 200`);
      t.equal(new Set(tries.map((d) => d.raw)).size, 1, 'the same body on every attempt');
      for (const d of tries) t.ok(signatureValid(d, SECRET), 'every attempt signed');
    }
  });

  t.test('a receiver that never answers 2xx: failed after WEBHOOK_MAX_ATTEMPTS, redirects not followed, kept and replayable', async (t) => {
    const lic = await h.createLicense({ totalQuota: 1 });
    await setWebhook(h, lic.licenseKey, `${receiver.url}/moved`, SECRET);
    const respond = receiver.respond;
    receiver.respond = (d) => (d.path === '/moved' ? { status: 307, headers: { location: `${receiver.url}/elsewhere` } } : respond(d));
    await spend(h, new TokenSource(h, lic), 1);
    const rows = await settled(h, lic.firmaId, 2);
    for (const row of rows) {
      t.ok(row.failed_at instanceof Date, `${row.type} failed`);
      t.equal(row.delivered_at, null);
      t.equal(row.attempts, 3, 'after three attempts');
      t.equal(row.last_status, 307);
      t.match(row.last_error, /redirect/);
    }
    t.equal(receiver.to('/moved').length, 6, 'three attempts per event, no more');
    t.equal(receiver.to('/elsewhere').length, 0, 'the redirect was not followed');
    const outbox = new WebhookOutbox(h.sql);
    t.match(await outbox.counts(), { failed: 2 }, 'counted');
    t.same((await outbox.failed()).map((e) => e.id).sort(), rows.map((r) => r.id).sort(), 'listed');

    receiver.respond = respond;
    t.equal(await outbox.replay([(rows[0]?.id as string).toUpperCase()]), 1, 'replay of one event (its id as an operator may write it, in capitals)');
    await waitFor('the replayed event delivered', async () => (await outboxOf(h, lic.firmaId)).some((r) => r.delivered_at));
    t.equal(receiver.to('/moved').length, 7, 'sent once more');
    t.equal(await outbox.replay(), 1, 'replay of the rest');
    const all = await pollUntil(() => outboxOf(h, lic.firmaId), (r) => r.every((row) => row.delivered_at));
    t.ok(all.every((r) => r.delivered_at && r.failed_at === null && r.attempts === 1), 'delivered, with a fresh count of attempts');

    const failures = h.logs.filter((l) => l.status === 307);
    t.equal(failures.length, 6, 'each failed attempt logged');
    t.equal(failures.filter((l) => String(l.msg).startsWith('webhook failed for good')).length, 2, 'the last ones as failed for good');
    t.match(failures[0], { level: 40, to: new URL(receiver.url).host, status: 307, attempt: 1 });
    t.notMatch(JSON.stringify(failures), '/moved', 'the host only, not the path');
    t.notMatch(JSON.stringify(h.logs), SECRET, 'the secret in no log line');
  });

  t.test('license.expiring once per expiry date, across scans; a license without a webhook gets nothing', async (t) => {
    const inDays = (d: number) => new Date(Date.now() + d * 86400_000).toISOString();
    const soon = await h.createLicense({ totalQuota: 5, expiryDate: inDays(3) });
    const later = await h.createLicense({ totalQuota: 5, expiryDate: inDays(30) });
    const silent = await h.createLicense({ totalQuota: 1, expiryDate: inDays(3) });
    await setWebhook(h, soon.licenseKey, `${receiver.url}/expiring`, SECRET);
    await setWebhook(h, later.licenseKey, `${receiver.url}/expiring`, SECRET);
    const [row] = await settled(h, soon.firmaId, 1);
    t.equal(row?.type, 'license.expiring');
    const [d] = receiver.to('/expiring');
    t.equal(d?.body.type, 'license.expiring');
    if (d) checkSigned(t, d);
    t.match(d?.body.data, { licenseKey: soon.licenseKey, totalQuota: 5, usedQuota: 0, remainingQuota: 5, daysLeft: 3 });
    t.equal(d?.body.data.expiryDate, new Date(d?.body.data.expiryDate as string).toISOString());

    // more scans (the worker's, one every 50 ms, and these) add nothing for the same date
    t.equal(await scanExpiring(h.sql, 7), 0, 'a scan finds nothing new');
    await spend(h, new TokenSource(h, silent), 1); // no webhook: neither quota event
    // a license that comes due later shows that the worker's scans went on meanwhile
    const next = await h.createLicense({ totalQuota: 5, expiryDate: inDays(2) });
    await setWebhook(h, next.licenseKey, `${receiver.url}/next`, SECRET);
    await settled(h, next.firmaId, 1);
    t.equal(receiver.to('/expiring').length, 1, 'license.expiring arrived once');
    t.same(await outboxOf(h, later.firmaId), [], 'expiring in 30 days: nothing yet');
    t.same(await outboxOf(h, silent.firmaId), [], 'a license without a webhook: no event at all');

    // a new expiry date within the window is a new event
    const moved = await h.admin('PATCH', `/admin/v1/licenses/${soon.licenseKey}`, { expiryDate: inDays(5) });
    t.equal(moved.status, 200);
    const rows = await settled(h, soon.firmaId, 2);
    t.same(rows.map((r) => r.type), ['license.expiring', 'license.expiring']);
    t.equal(receiver.to('/expiring').length, 2, 'the new date was announced');
    t.match(receiver.to('/expiring')[1]?.body.data, { daysLeft: 5 });
  });
});
