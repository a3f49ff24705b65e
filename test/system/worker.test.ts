import t from 'tap';
import { LIVE_COUNTS, startHarness, type Harness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { spawnWorker } from '../helpers/processes.js';
import { startPostgresProxy } from '../helpers/proxy.js';
import { mintTokens } from '../helpers/tokens.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { EventKind } from '../../src/redis/fields.js';
import { redemptionOf } from '../../src/usage/events.js';
import { eventFields } from '../helpers/events.js';

// The usage worker: events written by the Lua scripts reach Postgres once, whatever is
// replayed, duplicated, interrupted or left behind by a dead consumer.

async function tokenRows(h: Harness, firmaId: string) {
  return h.sql`
    select token_id, firma_id, imza_tipi::int as imza_tipi, status, issued_at, expires_at, used_at, origin
    from sign_tokens where firma_id = ${firmaId} order by token_id`;
}

/** Stream length summed over every usage stream of the service (what worker.lag() reports). */
async function streamTotal(h: Harness): Promise<number> {
  const lengths = await Promise.all(h.keys.streams.map((s) => h.redis.xlen(s)));
  return lengths.reduce((a, b) => a + b, 0);
}

/** Copies of every 'u' event of one token currently in its stream, as field lists. */
async function usedEventsOf(h: Harness, firmaId: string, tokenId: string): Promise<string[][]> {
  const entries = await h.redis.xrange(h.keys.forLicense(firmaId).stream, '-', '+');
  return entries
    .map(([, fields]) => fields)
    .filter((fields) => redemptionOf(fields)?.tokenId === tokenId);
}

t.test('issued and redeemed tokens reach Postgres; a replayed event changes nothing', async (t) => {
  const h = await startHarness(t, 'worker-rows', LIVE_COUNTS);
  const lic = await h.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(h, lic, 3, 1);
  const [a, b, c] = tokens as [string, string, string];
  const before = Date.now();
  const ra = await h.validate(a, 'https://app.example.com:8443/sign');
  const rb = await h.validate(b);
  t.equal(ra.status, 200);
  t.equal(rb.status, 200);
  t.equal(rb.body.usedQuota, 2);
  await h.drainWorker();
  const after = Date.now();

  t.equal(await h.postgresUsedQuota(lic.firmaId), 2, 'used_quota counts the two redemptions');
  const rows = await tokenRows(h, lic.firmaId);
  t.equal(rows.length, 3, 'every issued token is in the audit trail');
  const byId = new Map(rows.map((r) => [r.token_id as string, r]));
  const rowA = byId.get(claimsOf(a).token_id);
  const rowB = byId.get(claimsOf(b).token_id);
  const rowC = byId.get(claimsOf(c).token_id);
  t.equal(rowA?.status, 'used');
  t.equal(rowA?.origin, 'https://app.example.com:8443/sign', 'origin kept as the client sent it');
  t.equal(rowA?.imza_tipi, 1);
  t.ok(rowA?.used_at instanceof Date && rowA.used_at.getTime() >= before - 1000 && rowA.used_at.getTime() <= after + 1000,
    'used_at is the redemption time');
  t.equal(rowB?.status, 'used');
  t.equal(rowB?.origin, null, 'no origin sent: null');
  t.ok(rowB?.used_at instanceof Date);
  t.equal(rowC?.status, 'issued', 'the unredeemed token stays issued');
  t.equal(rowC?.used_at, null);
  t.equal(rowC?.imza_tipi, 1);
  t.equal(rowC?.expires_at?.getTime(), claimsOf(c).exp * 1000, 'expires_at is the token expiry');
  t.ok(rowC?.issued_at instanceof Date);

  // replay a copy of a's redemption with another time and origin: it must change nothing
  const ca = claimsOf(a);
  const stream = h.keys.forLicense(lic.firmaId).stream;
  await h.redis.xadd(stream, '*', ...eventFields({
    kind: EventKind.used, tokenId: ca.token_id, firmaId: lic.firmaId, imzaTipi: ca.imza_tipi, atMs: Date.now() + 60_000,
    issuedMs: ca.iat * 1000, origin: 'https://replayed.example',
  }));
  // and a replayed issuance of b must not turn it back into 'issued'
  const cb = claimsOf(b);
  await h.redis.xadd(stream, '*', ...eventFields({
    kind: EventKind.issued, tokenId: cb.token_id, firmaId: lic.firmaId, imzaTipi: cb.imza_tipi, atMs: Date.now(), expiresMs: cb.exp * 1000,
  }));
  await h.drainWorker();
  t.equal(await h.postgresUsedQuota(lic.firmaId), 2, 'used_quota unchanged by the replay');
  t.same(await tokenRows(h, lic.firmaId), rows, 'every row unchanged by the replay');

  // the live count is unchanged too
  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.body.data.usedQuota, 2);
});

t.test('duplicate events within one batch count once', async (t) => {
  // no worker in the serving harness: events pile up, then one worker reads them in one batch
  const h = await startHarness(t, 'worker-dup', { ...LIVE_COUNTS, RUN_WORKER: '0' });
  const lic = await h.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(h, lic, 3, 0);
  for (const token of tokens.slice(0, 2)) t.equal((await h.validate(token, 'dup.example')).status, 200);

  for (const token of tokens.slice(0, 2)) {
    const [event] = await usedEventsOf(h, lic.firmaId, claimsOf(token).token_id);
    t.ok(event, 'the redemption event is in the stream');
    for (let i = 0; i < 3; i++) await h.redis.xadd(h.keys.forLicense(lic.firmaId).stream, '*', ...(event as string[]));
  }
  // a token redeemed only by duplicated events (never through validate) still counts once
  const cc = claimsOf(tokens[2] as string);
  for (let i = 0; i < 2; i++) {
    await h.redis.xadd(h.keys.forLicense(lic.firmaId).stream, '*', ...eventFields({
      kind: EventKind.used, tokenId: cc.token_id, firmaId: lic.firmaId, imzaTipi: 0, atMs: Date.now(), issuedMs: cc.iat * 1000,
    }));
  }
  t.equal(await streamTotal(h), 3 + 2 + 6 + 2, 'all events wait in the stream');

  await spawnWorker(t, h.workerEnv()); // npm run worker
  await h.drainWorker();
  t.equal(await h.postgresUsedQuota(lic.firmaId), 3, 'three tokens turned used, each counted once');
  const rows = await tokenRows(h, lic.firmaId);
  t.equal(rows.length, 3);
  t.ok(rows.every((r) => r.status === 'used'), 'all three rows used');
});

t.test('events survive Postgres being down', async (t) => {
  const { proxy, url } = await startPostgresProxy(t); // registered first: closed after the harness has stopped
  const h = await startHarness(t, 'worker-pgdown', { ...LIVE_COUNTS, DATABASE_URL: url });
  const lic = await h.createLicense({ totalQuota: 8 });
  t.ok(proxy.connections > 0, 'the service talks to Postgres through the proxy');

  proxy.cut();
  // requests still work: quota enforcement continues from Redis
  const { tokens } = await mintTokens(h, lic, 6, 1);
  const answers = [];
  for (const token of tokens.slice(0, 5)) answers.push(await h.validate(token, 'down.example'));
  t.same(answers.map((a) => a.status), [200, 200, 200, 200, 200], 'validate answers 200 while Postgres is down');
  t.same(answers.map((a) => a.body.usedQuota), [1, 2, 3, 4, 5]);
  t.same(answers.map((a) => a.body.remainingQuota), [7, 6, 5, 4, 3]);
  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.body.data.usedQuota, 5, 'check-quota counts from Redis');

  await sleep(500); // give the worker time to try (and fail)
  t.equal(await streamTotal(h), 6 + 5, 'every event still waits in the streams');
  const none = await h.sql`select count(*)::int as n from sign_tokens where firma_id = ${lic.firmaId}`;
  t.equal(none[0]?.n, 0, 'nothing reached Postgres yet');
  t.equal(await h.postgresUsedQuota(lic.firmaId), 0);

  proxy.restore();
  await h.drainWorker(30_000);
  t.equal(await h.postgresUsedQuota(lic.firmaId), 5, 'used_quota right after Postgres is back');
  const rows = await tokenRows(h, lic.firmaId);
  t.equal(rows.length, 6, 'every issued token persisted');
  t.equal(rows.filter((r) => r.status === 'used').length, 5);
  t.ok(rows.filter((r) => r.status === 'used').every((r) => r.origin === 'down.example' && r.used_at instanceof Date));
  const admin = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
  t.equal(admin.body.data.usedQuota, 5);
});

t.test('a standalone worker process moves the events', async (t) => {
  const h = await startHarness(t, 'worker-cli', { ...LIVE_COUNTS, RUN_WORKER: '0' });
  const lic = await h.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(h, lic, 4, 0);
  for (const token of tokens.slice(0, 3)) t.equal((await h.validate(token)).status, 200);
  await sleep(200);
  t.equal(await streamTotal(h), 4 + 3, 'no worker in the server: events wait');
  const [empty] = await h.sql`select count(*)::int as n from sign_tokens`;
  t.equal(empty?.n, 0, 'nothing in Postgres yet');

  const worker = await spawnWorker(t, h.workerEnv());

  await waitFor('the standalone worker drains the streams', async () => (await streamTotal(h)) === 0, 20_000);
  t.equal(await h.postgresUsedQuota(lic.firmaId), 3);
  const rows = await tokenRows(h, lic.firmaId);
  t.equal(rows.length, 4);
  t.equal(rows.filter((r) => r.status === 'used').length, 3);

  const exit = await worker.stop('SIGTERM');
  t.equal(exit.code, 0, `the worker stops cleanly on SIGTERM ${worker.text('stderr')}`);
});

t.test('pending events of a dead consumer are reclaimed', async (t) => {
  const h = await startHarness(t, 'worker-claim', { ...LIVE_COUNTS, RUN_WORKER: '0' });
  const lic = await h.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(h, lic, 3, 1);
  for (const token of tokens.slice(0, 2)) t.equal((await h.validate(token)).status, 200);

  const streams = h.keys.streams;
  for (const stream of streams) {
    await h.redis.xgroup('CREATE', stream, 'usage', '0', 'MKSTREAM').catch((err: Error) => {
      if (!err.message.includes('BUSYGROUP')) throw err;
    });
  }
  const read = (await h.redis.xreadgroup('GROUP', 'usage', 'dead', 'COUNT', 100, 'STREAMS', ...streams,
    ...streams.map(() => '>'))) as [string, [string, string[]][]][] | null;
  const delivered = (read ?? []).reduce((n, [, entries]) => n + entries.length, 0);
  t.equal(delivered, 5, "the dead consumer took every event and never acknowledged them");
  const pending = (await h.redis.xpending(h.keys.forLicense(lic.firmaId).stream, 'usage')) as [number, ...unknown[]];
  t.equal(pending[0], 5, 'all five are pending on the dead consumer');

  await spawnWorker(t, h.workerEnv({ WORKER_CLAIM_IDLE_MS: '200' })); // npm run worker
  await h.drainWorker(15_000);
  t.equal(await h.postgresUsedQuota(lic.firmaId), 2, 'the reclaimed redemptions are counted');
  const rows = await tokenRows(h, lic.firmaId);
  t.equal(rows.length, 3, 'the reclaimed issuances are in the audit trail');
  t.equal(rows.filter((r) => r.status === 'used').length, 2);
  const left = (await h.redis.xpending(h.keys.forLicense(lic.firmaId).stream, 'usage')) as [number, ...unknown[]];
  t.equal(left[0], 0, 'nothing left pending');
});
