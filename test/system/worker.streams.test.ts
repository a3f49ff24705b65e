import t from 'tap';
import { LIVE_COUNTS, startHarness, type Harness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { spawnWorker } from '../helpers/processes.js';
import { mintTokens } from '../helpers/tokens.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { EventKind } from '../../src/redis/fields.js';
import { eventFields, legacyEventFields } from '../helpers/events.js';
import { GROUP } from '../../src/usage/ack.js';

// How the usage worker reads and leaves its streams: events of the earlier field-per-value
// form are still written, the redemptions of one linger interval share one Postgres
// statement, and acknowledging trims the stream only of what no consumer still holds.

async function streamTotal(h: Harness): Promise<number> {
  const lengths = await Promise.all(h.keys.streams.map((s) => h.redis.xlen(s)));
  return lengths.reduce((a, b) => a + b, 0);
}

t.test('events queued by an earlier version (a field per value) are written as the one-field form is', async (t) => {
  const h = await startHarness(t, 'worker-legacy', { ...LIVE_COUNTS, RUN_WORKER: '0' });
  const lic = await h.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(h, lic, 4, 1);
  const [a, b, c, d] = tokens.map(claimsOf) as [ReturnType<typeof claimsOf>, ReturnType<typeof claimsOf>, ReturnType<typeof claimsOf>, ReturnType<typeof claimsOf>];
  const stream = h.keys.forLicense(lic.firmaId).stream;
  const at = Date.UTC(2026, 10, 24, 12, 0, 0, 123);
  // a and b redeemed in the old form (with and without origin, b with an empty one), c in the new one; d stays issued
  await h.redis.xadd(stream, '*', ...legacyEventFields({ kind: EventKind.used, tokenId: a.token_id, firmaId: lic.firmaId, imzaTipi: 1, atMs: at, issuedMs: a.iat * 1000, origin: 'https://old.example' }));
  await h.redis.xadd(stream, '*', ...legacyEventFields({ kind: EventKind.used, tokenId: b.token_id, firmaId: lic.firmaId, imzaTipi: 1, atMs: at + 1, issuedMs: b.iat * 1000, origin: '' }));
  await h.redis.xadd(stream, '*', ...eventFields({ kind: EventKind.used, tokenId: c.token_id, firmaId: lic.firmaId, imzaTipi: 1, atMs: at + 2, issuedMs: c.iat * 1000 }));
  await h.redis.xadd(stream, '*', ...legacyEventFields({ kind: EventKind.issued, tokenId: d.token_id, firmaId: lic.firmaId, imzaTipi: 1, atMs: at, expiresMs: d.exp * 1000 }));

  await spawnWorker(t, h.workerEnv()); // npm run worker
  await h.drainWorker();
  t.equal(await h.postgresUsedQuota(lic.firmaId), 3, 'three redemptions counted, whatever their form');
  const rows = await h.sql`select token_id, status, used_at, origin, imza_tipi::int as imza_tipi from sign_tokens where firma_id = ${lic.firmaId}`;
  const byId = new Map(rows.map((r) => [r.token_id as string, r]));
  t.equal(byId.get(a.token_id)?.origin, 'https://old.example', 'the old form\'s origin');
  t.equal((byId.get(a.token_id)?.used_at as Date).getTime(), at, 'and its time, to the millisecond');
  t.equal(byId.get(b.token_id)?.origin, '', 'an empty origin stays empty, not null');
  t.equal(byId.get(c.token_id)?.origin, null, 'no origin: null');
  t.equal(byId.get(d.token_id)?.status, 'issued');
  t.equal(byId.get(a.token_id)?.imza_tipi, 1);
  const [redemptions] = await h.sql`select count(*)::int as n from token_redemptions where firma_id = ${lic.firmaId}`;
  t.equal(redemptions?.n, 3, 'three redemption rows');
});

t.test('the redemptions of one linger interval are written by one statement', async (t) => {
  const h = await startHarness(t, 'worker-linger', { ...LIVE_COUNTS, WORKER_LINGER_MS: '1500' });
  const lic = await h.createLicense({ totalQuota: 20 });
  const { tokens } = await mintTokens(h, lic, 11, 0);
  await h.drainWorker();
  // the first redemption after a quiet spell is written at once; the worker then lingers
  t.equal((await h.validate(tokens[0] as string)).status, 200);
  await waitFor('the first redemption lands', async () => (await h.postgresUsedQuota(lic.firmaId)) === 1, 3_000);
  const answers = await Promise.all(tokens.slice(1).map((token) => h.validate(token)));
  t.same(answers.map((a) => a.status), Array(10).fill(200), 'ten more redemptions, answered at once');
  await sleep(300);
  t.equal(await h.postgresUsedQuota(lic.firmaId), 1, 'not yet written: the worker lets them gather');
  await waitFor('the ten land', async () => (await h.postgresUsedQuota(lic.firmaId)) === 11, 5_000);
  const [row] = await h.sql`
    select count(distinct xmin::text)::int as statements from token_redemptions
    where token_id = any(${tokens.slice(1).map((tk) => claimsOf(tk).token_id)}::uuid[])`;
  t.equal(row?.statements, 1, 'the ten rows were inserted by one statement');
});

t.test('at a rate that gathers WORKER_LINGER_EVENTS sooner, the worker lingers only that long', async (t) => {
  const h = await startHarness(t, 'worker-linger-events', { ...LIVE_COUNTS, WORKER_LINGER_MS: '1500', WORKER_LINGER_EVENTS: '5' });
  const lic = await h.createLicense({ totalQuota: 40 });
  const { tokens } = await mintTokens(h, lic, 22, 0);
  await h.drainWorker();
  t.equal((await h.validate(tokens[0] as string)).status, 200);
  await waitFor('the first redemption lands', async () => (await h.postgresUsedQuota(lic.firmaId)) === 1, 3_000);
  // twenty arrive while the worker lingers its longest (1.5 s): a rate of about 13 a second
  const answers = await Promise.all(tokens.slice(1, 21).map((token) => h.validate(token)));
  t.same(answers.map((a) => a.status), Array(20).fill(200));
  await waitFor('the twenty land', async () => (await h.postgresUsedQuota(lic.firmaId)) === 21, 5_000);
  // at that rate five events gather in about 375 ms: the next one waits no longer than that
  const sent = Date.now();
  t.equal((await h.validate(tokens[21] as string)).status, 200);
  await waitFor('the next redemption lands', async () => (await h.postgresUsedQuota(lic.firmaId)) === 22, 3_000, 10);
  const waited = Date.now() - sent;
  t.ok(waited < 1000, `it landed ${waited} ms after its answer (the longest linger is 1500 ms)`);
});

t.test('acknowledging trims the stream, but never an entry another worker holds', async (t) => {
  const h = await startHarness(t, 'worker-trim', { ...LIVE_COUNTS, WORKER_CLAIM_IDLE_MS: '60000' });
  const lic = await h.createLicense({ totalQuota: 20 });
  const stream = h.keys.forLicense(lic.firmaId).stream;
  const { tokens } = await mintTokens(h, lic, 6, 0);
  await h.drainWorker();
  t.equal(await h.redis.xlen(stream), 0, 'written events are trimmed off the stream');

  // another consumer takes one event and holds it (a worker in the middle of its batch)
  // (added and read in one transaction: the service's worker, blocked in its read, cannot take it first)
  const c0 = claimsOf(tokens[0] as string);
  const [[, held]] = (await h.redis.multi()
    .xadd(stream, '*', ...eventFields({ kind: EventKind.used, tokenId: c0.token_id, firmaId: lic.firmaId, imzaTipi: 0, atMs: Date.now(), issuedMs: c0.iat * 1000 }))
    .xreadgroup('GROUP', GROUP, 'other-worker', 'COUNT', 1, 'STREAMS', stream, '>')
    .exec()) as [[null, string], [null, unknown]];
  const pending = (await h.redis.xpending(stream, GROUP)) as [number, string, string, [string, string][]];
  t.same(pending[3], [['other-worker', '1']], 'the other worker holds the event');

  for (const token of tokens.slice(1)) t.equal((await h.validate(token)).status, 200);
  await waitFor('the service\'s worker writes the later redemptions', async () => (await h.postgresUsedQuota(lic.firmaId)) === 5, 5_000);
  await sleep(200);
  const left = (await h.redis.xrange(stream, '-', '+')).map(([id]) => id);
  t.equal(left[0], held, 'the held entry is still in the stream');
  t.equal(left.length, 6, 'and so is everything after it (trimming stops at the oldest entry held)');
  t.equal(await streamTotal(h), 6, 'the lag counts them');

  // the other worker writes nothing and dies: its entry is reclaimed, and the stream empties
  await spawnWorker(t, h.workerEnv({ WORKER_CLAIM_IDLE_MS: '200' })); // npm run worker
  await waitFor('the held redemption is reclaimed and written', async () => (await h.postgresUsedQuota(lic.firmaId)) === 6, 10_000);
  await h.drainWorker();
  t.equal(await h.redis.xlen(stream), 0, 'the stream is empty');
});
