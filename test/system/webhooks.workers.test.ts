import t from 'tap';
import { DATABASE_URL, LIVE_COUNTS, REDIS_URL, startHarness } from '../helpers/harness.js';
import { spawnWorker } from '../helpers/processes.js';
import { TokenSource } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';
import { LOCAL_RECEIVERS, outboxOf, QUICK_WEBHOOKS, setWebhook, signatureValid, startReceiver } from '../helpers/webhooks.js';

// The webhook sender beside other workers and beside the usage worker: two workers on one
// outbox never send one event twice, and a receiver that hangs holds up no usage event.

const SECRET = 'whsec-workers-0123456789abcdef';

t.test('two workers at once: every event delivered exactly once', async (t) => {
  const env = { ...QUICK_WEBHOOKS, ...LOCAL_RECEIVERS, WEBHOOK_CONCURRENCY: '2' };
  const h = await startHarness(t, 'webhooks2', { ...LIVE_COUNTS, ...env });
  // a second worker process on the same Redis keys and Postgres schema (usage and webhooks)
  const second = await spawnWorker(t, { REDIS_URL, REDIS_PREFIX: h.prefix, PG_SCHEMA: h.config.pgSchema, DATABASE_URL, ...env, LOG_LEVEL: 'debug' });
  // each answer takes a moment, so neither worker can send them all before the other claims
  const receiver = await startReceiver(t, () => new Promise((resolve) => setTimeout(() => resolve(200), 20)));
  const lic = await h.createLicense({ totalQuota: 2 });
  await setWebhook(h, lic.licenseKey, `${receiver.url}/both`, SECRET);

  // many due at once, so both workers claim from the same rows at the same time
  const N = 60;
  await h.sql`
    insert into webhook_events (event_key, firma_id, type, payload)
    select 'test.burst:' || i, ${lic.firmaId}, 'test.burst', jsonb_build_object('n', i) from generate_series(1, ${N}) as i`;
  // and two real ones through the public API, written by whichever usage worker reads them
  const source = new TokenSource(h, lic);
  for (let i = 0; i < 2; i++) t.equal((await h.validate(await source.next())).status, 200);

  const rows = await pollUntil(() => outboxOf(h, lic.firmaId), (r) => r.length === N + 2 && r.every((row) => row.delivered_at), { timeoutMs: 30_000 });
  t.equal(rows.length, N + 2, 'every event in the outbox');
  t.ok(rows.every((r) => r.delivered_at), 'every event delivered');
  t.ok(rows.every((r) => r.attempts === 1), 'each on one attempt');
  const ids = receiver.to('/both').map((d) => d.body.id);
  t.equal(ids.length, N + 2, 'as many requests as events');
  t.equal(new Set(ids).size, N + 2, 'no event twice');
  t.same(new Set(ids), new Set(rows.map((r) => r.id)), 'the outbox events, each once');
  t.same(receiver.to('/both').filter((d) => d.body.type !== 'test.burst').map((d) => d.body.type).sort(), ['quota.exhausted', 'quota.low']);
  t.ok(receiver.deliveries.every((d) => signatureValid(d, SECRET)), 'all signed');
  const bySecond = second.records().filter((r) => r.msg === 'webhook delivered').length;
  t.ok(bySecond > 0 && bySecond < N + 2, `both workers delivered (the second ${bySecond} of ${N + 2})`);
});

t.test('a receiver that never answers holds up no usage event, and the worker still stops', async (t) => {
  const h = await startHarness(t, 'webhookshang', {
    ...LIVE_COUNTS, ...QUICK_WEBHOOKS, ...LOCAL_RECEIVERS, WEBHOOK_TIMEOUT_MS: '60000', WEBHOOK_CONCURRENCY: '1', SHUTDOWN_TIMEOUT_MS: '500',
  });
  const receiver = await startReceiver(t);
  // never answers (the teardown closes the connection): the only delivery slot stays taken
  receiver.respond = () => new Promise<number>(() => {});
  const lic = await h.createLicense({ totalQuota: 1 });
  await setWebhook(h, lic.licenseKey, `${receiver.url}/hang`, SECRET);
  await h.validate(await new TokenSource(h, lic).next());
  await pollUntil(async () => receiver.deliveries.length, (n) => n >= 1);
  t.equal(receiver.deliveries.length, 1, 'one delivery in flight, hanging');

  // meanwhile the usage worker goes on writing redemptions
  const other = await h.createLicense({ totalQuota: 50 });
  const source = new TokenSource(h, other);
  for (let i = 0; i < 20; i++) t.equal((await h.validate(await source.next())).status, 200);
  await h.drainWorker();
  const [row] = await h.sql`select used_quota::int as used from licenses where firma_id = ${other.firmaId}`;
  t.equal(row?.used, 20, 'every redemption reached Postgres while the webhook hung');
  const events = await outboxOf(h, lic.firmaId);
  t.ok(events.every((e) => e.delivered_at === null), 'the hung event is not taken as delivered');
});
