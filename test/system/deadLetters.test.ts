import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { LIVE_COUNTS, startHarness, type Harness, type Teardown } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { startPostgresProxy } from '../helpers/proxy.js';
import { getTokenPair, mintTokens } from '../helpers/tokens.js';
import { pollUntil, sleep, waitFor } from '../helpers/wait.js';
import { EventKind } from '../../src/redis/fields.js';
import { eventFields } from '../helpers/events.js';
import { readEvent } from '../../src/usage/events.js';

// Poison-proof persistence: a usage event Postgres refuses for good becomes a dead letter
// (kept, counted in /healthz, replayable with `npm run dead-letters`), every other event of
// its batch is still written, and the stream keeps moving. A transient failure is retried,
// never dead-lettered.

const run = promisify(execFile);
const deadLettersCli = fileURLToPath(new URL('../../src/cli/deadLetters.js', import.meta.url));

/** SQLSTATE of class 22 (data exception). */
const DATA_EXCEPTION = /^22[0-9A-Z]{3}$/;

type Fields = Record<string, string>;

function record(list: string[]): Fields {
  const out: Fields = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i] as string] = list[i + 1] as string;
  return out;
}

interface DeadEntry {
  deadId: string;
  stream: string;
  id: string;
  error: string;
  code: string;
  /** the original event's field list, decoded from the entry's `event` JSON */
  event: string[];
  raw: Fields;
}

/** The dead-letter stream, read straight from Redis (not through src/usage/deadLetters.ts). */
async function deadLetters(h: Harness): Promise<DeadEntry[]> {
  const entries = await h.redis.xrange(h.keys.deadLetters, '-', '+');
  return entries.map(([deadId, list]) => {
    const raw = record(list);
    return {
      deadId, raw,
      stream: raw.stream ?? '', id: raw.id ?? '', error: raw.error ?? '', code: raw.code ?? '',
      event: raw.event === undefined ? [] : (JSON.parse(raw.event) as string[]),
    };
  });
}

const deadCount = (h: Harness) => h.redis.xlen(h.keys.deadLetters);

interface Health {
  status: number;
  deadLetters: number | null;
  usageLag: number | null;
}

async function health(h: Harness): Promise<Health> {
  const res = await h.request('GET', '/healthz');
  return { status: res.status, deadLetters: res.body?.deadLetters ?? null, usageLag: res.body?.usageLag ?? null };
}

/** /healthz until it shows what `done` expects (its report may be up to a second old); the last answer seen. */
function healthUntil(h: Harness, done: (hz: Health) => boolean): Promise<Health> {
  return pollUntil(() => health(h), done, { timeoutMs: 10_000, intervalMs: 100 });
}

/** Events waiting in the usage streams (what the worker's lag counts: src/usage/lag.ts). */
async function lag(h: Harness): Promise<number> {
  return (await Promise.all(h.keys.streams.map((s) => h.redis.xlen(s)))).reduce((a, b) => a + b, 0);
}

async function rowOf(h: Harness, tokenId: string): Promise<{ status: string; origin: string | null; firma_id: string } | undefined> {
  const [row] = await h.sql`select status, origin, firma_id from sign_tokens where token_id = ${tokenId}`;
  return row as { status: string; origin: string | null; firma_id: string } | undefined;
}

async function rowCount(h: Harness, firmaId: string): Promise<number> {
  const [row] = await h.sql`select count(*)::int as n from sign_tokens where firma_id = ${firmaId}`;
  return row?.n ?? 0;
}

/** Adds field lists to one stream in one MULTI (the worker reads them as one batch); returns their ids. */
async function xaddAtomically(h: Harness, stream: string, events: string[][]): Promise<string[]> {
  const multi = h.redis.multi();
  for (const fields of events) multi.xadd(stream, '*', ...fields);
  const results = (await multi.exec()) ?? [];
  if (results.length !== events.length) throw new Error('MULTI did not run every XADD');
  return results.map(([err, id]) => {
    if (err) throw err;
    return id as string;
  });
}

function issuedEvent(tokenId: string, firmaId: string, imzaTipi = '0'): string[] {
  const now = Date.now();
  return eventFields({ kind: EventKind.issued, tokenId, firmaId, imzaTipi, atMs: now, expiresMs: now + 300_000 });
}

function usedEvent(jwt: string, origin: string, imzaTipi?: string): string[] {
  const c = claimsOf(jwt);
  return eventFields({
    kind: EventKind.used, tokenId: c.token_id, firmaId: c.firma_id, imzaTipi: imzaTipi ?? c.imza_tipi, atMs: Date.now(),
    issuedMs: c.iat * 1000, origin,
  });
}

/** Runs `node dist/src/cli/deadLetters.js <args>` against the harness's Redis and Postgres. */
async function cli(h: Harness, ...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [deadLettersCli, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      REDIS_URL: h.config.redisUrl,
      REDIS_PREFIX: h.config.redisPrefix,
      DATABASE_URL: h.config.databaseUrl,
      PG_SCHEMA: h.config.pgSchema,
      LOG_LEVEL: 'silent',
    },
    timeout: 10_000,
  });
  return stdout;
}

/** get-token + validate over HTTP; resolves once validate has answered. */
async function redeem(h: Harness, lic: { licenseKey: string; password: string }, origin?: string) {
  const { signToken } = await getTokenPair(h, lic);
  const answer = await h.validate(signToken, origin);
  return { signToken, tokenId: claimsOf(signToken).token_id, answer };
}

t.test('one poisoned event among 1,000: 999 rows land, one dead letter, the stream keeps moving', async (t) => {
  const h = await startHarness(t, 'deadletters', { ...LIVE_COUNTS, WORKER_BATCH_SIZE: '1000' }, { logLevel: 'warn' });
  const lic = await h.createLicense({ totalQuota: 10 });
  const stream = h.keys.forLicense(lic.firmaId).stream;

  const good = Array.from({ length: 999 }, () => randomUUID());
  const poisonId = `poison\u0000${randomUUID()}`;
  const poison = issuedEvent(poisonId, lic.firmaId);
  const events = good.map((id) => issuedEvent(id, lic.firmaId));
  events.splice(500, 0, poison);
  const ids = await xaddAtomically(h, stream, events);
  const poisonStreamId = ids[500] as string;

  // a worker retrying the batch forever never gets here
  await waitFor('the batch is persisted and the poisoned event is buried', async () =>
    (await h.redis.xlen(stream)) === 0 && (await deadCount(h)) === 1, 10_000);

  t.equal(await rowCount(h, lic.firmaId), 999, 'every good event of the batch is in sign_tokens');
  const [{ n: known } = { n: 0 }] = await h.sql`
    select count(*)::int as n from sign_tokens where token_id = any(${h.sql.array(good)}::text[]) and status = 'issued'`;
  t.equal(known, 999, 'and they are exactly the good token ids, as issued');

  const dead = await deadLetters(h);
  t.equal(dead.length, 1, 'exactly one dead letter');
  const letter = dead[0] as DeadEntry;
  t.same(Object.keys(letter.raw).sort(), ['code', 'error', 'event', 'id', 'stream'], 'fields stream, id, error, code, event');
  t.equal(letter.stream, stream, 'it names the stream the event was queued on');
  t.equal(letter.id, poisonStreamId, 'and the event id in that stream');
  t.same(letter.event, poison, 'it keeps the event field for field, NUL included');
  t.match(letter.code, DATA_EXCEPTION, `its code is a SQLSTATE of class 22 (got ${letter.code})`);
  t.ok(letter.error.length > 0, `it keeps Postgres's message (${letter.error})`);

  const warned = h.logs.filter((l) => l.level === 40 && l.stream === stream && l.id === poisonStreamId);
  t.equal(warned.length, 1, 'the worker logged one warning naming the stream and the id');
  t.equal(warned[0]?.code, letter.code, 'with the code');

  const hz = await healthUntil(h, (hz) => hz.deadLetters === 1 && hz.usageLag === 0);
  t.equal(hz.status, 200);
  t.equal(hz.deadLetters, 1, '/healthz counts the dead letter');
  t.equal(hz.usageLag, 0, '/healthz: usage lag back to 0');

  // the stream is not wedged: a real redemption reaches Postgres within a second
  const { tokenId, answer } = await redeem(h, lic);
  t.equal(answer.status, 200, 'validate answers 200');
  const answered = Date.now();
  await waitFor('the redemption reaches Postgres', async () =>
    (await rowOf(h, tokenId))?.status === 'used' && (await h.postgresUsedQuota(lic.firmaId)) === 1, 1_000);
  t.ok(Date.now() - answered <= 1_000, `persisted ${Date.now() - answered} ms after the validate answer`);
  t.equal(await deadCount(h), 1, 'still exactly one dead letter');
});

t.test('an entry of several redemptions, one line poisoned: the others count once, that line alone is a dead letter, once', async (t) => {
  const h = await startHarness(t, 'deadletters-lines', { ...LIVE_COUNTS, WORKER_BATCH_SIZE: '1000', WORKER_CLAIM_IDLE_MS: '500' }, { logLevel: 'warn' });
  const lic = await h.createLicense({ totalQuota: 20 });
  const { tokens } = await mintTokens(h, lic, 6, 0);
  await h.drainWorker();
  const [g0, g1, g2, p3, g4, p5] = tokens as [string, string, string, string, string, string];
  const lineOf = (fields: string[]) => fields[1] as string;
  const poisoned = usedEvent(p3, 'bad\u0000.example');
  // the good lines, the poisoned one among them, and a good one again (a replayed line counts
  // once). The replay is the same line: built twice, its times could differ by a millisecond,
  // which makes it a second redemption (another dead letter), not a replay
  const first = usedEvent(g0, 'good.example');
  const lines = [first, usedEvent(g1, 'good.example'), poisoned, usedEvent(g2, 'good.example'), first].map(lineOf);
  const stream = h.keys.forLicense(lic.firmaId).stream;
  const [entryId] = await xaddAtomically(h, stream, [[EventKind.spent, lines.join('\n')]]);

  // what it saw last, and the worker's warnings, named if it times out (seen in CI only)
  let seen = '';
  await waitFor(() => `the entry is persisted and acknowledged, its poisoned line buried (last seen: ${seen}; warnings: `
    + `${JSON.stringify(h.logs.filter((l) => (l.level as number) >= 40).slice(-6)).slice(0, 3000)})`, async () => {
    const [waiting, dead, pending] = [await lag(h), await deadCount(h), (await h.redis.xpending(stream, 'usage'))[0]];
    seen = `lag ${waiting}, dead letters ${dead}, pending ${pending}`;
    return waiting === 0 && dead === 1;
  }, 10_000);
  t.equal(await h.postgresUsedQuota(lic.firmaId), 3, 'used_quota counts each good line once');
  for (const jwt of [g0, g1, g2]) t.equal((await rowOf(h, claimsOf(jwt).token_id))?.status, 'used', 'a good line is a redemption');
  t.equal((await rowOf(h, claimsOf(p3).token_id))?.status, 'issued', 'the poisoned line is not');
  const [letter] = await deadLetters(h);
  t.equal(letter?.id, entryId, 'the dead letter names the entry');
  t.same(letter?.event, poisoned, 'and holds the poisoned line alone, as an event of its own');
  t.equal((await h.redis.xpending(stream, 'usage'))[0], 0, 'nothing of the entry is left pending');

  // a worker that buried an entry's poisoned line and died before acknowledging the entry:
  // the next one claims it and writes it again, and the line stays one dead letter
  const poisonedAgain = usedEvent(p5, 'bad\u0000.example');
  const [[, added], [, read]] = (await h.redis.multi()
    .xadd(stream, '*', EventKind.spent, [usedEvent(g4, 'good.example'), poisonedAgain].map(lineOf).join('\n'))
    .xreadgroup('GROUP', 'usage', 'a-dead-worker', 'COUNT', 10, 'STREAMS', stream, '>')
    .exec()) as [[null, string], [null, [string, [string, string[]][]][]]];
  t.same(read[0]?.[1].map(([id]) => id), [added], 'the dead worker read the entry');
  await h.redis.xadd(h.keys.deadLetters, '*', 'stream', stream, 'id', added, 'error', 'invalid byte sequence for encoding "UTF8": 0x00',
    'code', '22021', 'event', JSON.stringify(poisonedAgain));
  await waitFor('the entry is claimed, persisted and acknowledged', async () =>
    (await lag(h)) === 0 && (await h.redis.xpending(stream, 'usage'))[0] === 0, 10_000);
  t.equal(await h.postgresUsedQuota(lic.firmaId), 4, 'its good line counts once');
  t.equal((await rowOf(h, claimsOf(g4).token_id))?.status, 'used', 'and is a redemption');
  t.same((await deadLetters(h)).map((d) => d.id), [entryId, added], 'its poisoned line is buried once, not again by the worker that claimed it');
});

t.test('poisoned redemption events: the good ones count exactly once, the poisoned ones are dead letters', async (t) => {
  const h = await startHarness(t, 'deadletters-used', { ...LIVE_COUNTS, WORKER_BATCH_SIZE: '1000' });
  const lic = await h.createLicense({ totalQuota: 20 });
  const { tokens } = await mintTokens(h, lic, 6, 0);
  await h.drainWorker();
  t.equal(await rowCount(h, lic.firmaId), 6, 'the six issued tokens are in Postgres');

  const [g0, g1, g2, g3, p4, p5] = tokens as [string, string, string, string, string, string];
  const goodEvents = [g0, g1, g2, g3].map((jwt) => usedEvent(jwt, 'good.example'));
  const nulOrigin = usedEvent(p4, 'bad\u0000.example');
  const outOfRange = usedEvent(p5, 'good.example', '99999'); // imza_tipi is a smallint
  const [e0, e1, e2, e3] = goodEvents as [string[], string[], string[], string[]];
  // each good redemption twice, the copies in the other half of the bisected batch
  const batch = [e0, e1, nulOrigin, e2, e0, e3, outOfRange, e1, e2, e3];
  const ids = await xaddAtomically(h, h.keys.forLicense(lic.firmaId).stream, batch);

  await waitFor('the batch is persisted and both poisoned events are buried', async () =>
    (await lag(h)) === 0 && (await deadCount(h)) === 2, 10_000);

  t.equal(await h.postgresUsedQuota(lic.firmaId), 4, 'used_quota counts each good redemption once');
  for (const jwt of [g0, g1, g2, g3]) {
    const row = await rowOf(h, claimsOf(jwt).token_id);
    t.equal(row?.status, 'used', 'a good redemption is used');
    t.equal(row?.origin, 'good.example');
  }
  for (const jwt of [p4, p5]) t.equal((await rowOf(h, claimsOf(jwt).token_id))?.status, 'issued', 'a poisoned one is not');

  const dead = await deadLetters(h);
  t.equal(dead.length, 2);
  const byId = new Map(dead.map((d) => [d.id, d]));
  const nul = byId.get(ids[2] as string);
  const range = byId.get(ids[6] as string);
  t.same(nul?.event, nulOrigin, 'the NUL origin event is a dead letter, kept as queued');
  t.match(nul?.code, DATA_EXCEPTION, `NUL: class 22 (got ${nul?.code})`);
  t.same(range?.event, outOfRange, 'the out-of-range event is a dead letter, kept as queued');
  t.equal(range?.code, '22003', `out of range for smallint: 22003 (got ${range?.code})`);
  t.ok(dead.every((d) => d.stream === h.keys.forLicense(lic.firmaId).stream));

  // the same good redemptions once more, in a later batch: nothing changes
  await xaddAtomically(h, h.keys.forLicense(lic.firmaId).stream, goodEvents);
  await h.drainWorker();
  t.equal(await h.postgresUsedQuota(lic.firmaId), 4, 'replayed good redemptions change nothing');
  t.equal(await deadCount(h), 2, 'nor the dead letters');
});

t.test('a malformed event is a dead letter (BAD_EVENT) and does not block the stream', async (t) => {
  const h = await startHarness(t, 'deadletters-bad', LIVE_COUNTS);
  const lic = await h.createLicense({ totalQuota: 10 });
  const stream = h.keys.forLicense(lic.firmaId).stream;
  const before = randomUUID();
  const after = randomUUID();
  const noToken = eventFields({ kind: EventKind.issued, firmaId: lic.firmaId, imzaTipi: 0, atMs: Date.now(), expiresMs: Date.now() + 300_000 });
  const noKind = eventFields({ kind: 'x', tokenId: randomUUID(), firmaId: lic.firmaId });
  const ids = await xaddAtomically(h, stream, [issuedEvent(before, lic.firmaId), noToken, noKind, issuedEvent(after, lic.firmaId)]);

  await waitFor('the malformed events are buried', async () => (await deadCount(h)) === 2 && (await h.redis.xlen(stream)) === 0, 10_000);
  t.equal((await rowOf(h, before))?.status, 'issued', 'the event before it is written');
  t.equal((await rowOf(h, after))?.status, 'issued', 'the event after it is written');
  const dead = await deadLetters(h);
  t.same(dead.map((d) => d.id), [ids[1], ids[2]], 'both malformed events, in order');
  t.same(dead.map((d) => d.code), ['BAD_EVENT', 'BAD_EVENT']);
  t.same(dead.map((d) => d.stream), [stream, stream]);
  t.same(dead[0]?.event, noToken, 'kept as queued');
  t.same(dead[1]?.event, noKind);

  const { tokenId, answer } = await redeem(h, lic);
  t.equal(answer.status, 200);
  await waitFor('a real redemption lands', async () => (await rowOf(h, tokenId))?.status === 'used', 2_000);
  t.equal(await h.postgresUsedQuota(lic.firmaId), 1);
  t.equal((await healthUntil(h, (hz) => hz.deadLetters === 2)).deadLetters, 2, '/healthz counts them');
});

t.test('a refused redemption waits as a dead letter, and lands once when replayed after the fix', async (t) => {
  const h = await startHarness(t, 'deadletters-replay', LIVE_COUNTS);
  const lic = await h.createLicense({ totalQuota: 10 });
  const stream = h.keys.forLicense(lic.firmaId).stream;
  await h.sql`alter table token_redemptions add constraint t_no_poison check (origin is distinct from 'poison.example')`;

  const poisoned = await redeem(h, lic, 'poison.example');
  t.equal(poisoned.answer.status, 200, 'validate answers 200: Redis accepted the redemption');
  t.equal(poisoned.answer.body.usedQuota, 1);
  const fine = await redeem(h, lic, 'fine.example');
  t.equal(fine.answer.status, 200);

  await waitFor('the refused redemption is buried, the other lands', async () =>
    (await deadCount(h)) === 1 && (await rowOf(h, fine.tokenId))?.status === 'used', 5_000);
  await h.drainWorker();
  t.equal((await rowOf(h, poisoned.tokenId))?.status, 'issued', 'the refused redemption is not in Postgres');
  t.equal(await h.postgresUsedQuota(lic.firmaId), 1, 'only the other redemption is counted');
  const later = await redeem(h, lic, 'fine.example');
  await waitFor('redemptions keep landing', async () => (await rowOf(h, later.tokenId))?.status === 'used', 2_000);
  t.equal(await h.postgresUsedQuota(lic.firmaId), 2);

  const [letter] = await deadLetters(h);
  t.equal(letter?.code, '23514', 'check_violation');
  t.equal(readEvent(letter?.event ?? [])?.tokenId, poisoned.tokenId);

  const listed = (await cli(h, 'list')).trim().split('\n').filter((l) => l !== '');
  t.equal(listed.length, 1, 'list: one JSON line');
  const line = JSON.parse(listed[0] as string) as Record<string, unknown>;
  t.equal(line.stream, stream, 'it names the stream');
  t.equal(line.id, letter?.id, 'the event id');
  t.equal(line.code, '23514', 'and the code');
  t.equal(readEvent(line.fields as string[])?.origin, 'poison.example', 'and carries the fields');
  t.equal((await cli(h, 'count')).trim(), '1', 'count: 1');

  await h.sql`alter table token_redemptions drop constraint t_no_poison`; // the fix
  const replayed = await cli(h, 'replay');
  t.match(replayed, /replayed 1 /, replayed.trim());
  await waitFor('the replayed redemption lands', async () => (await rowOf(h, poisoned.tokenId))?.status === 'used', 5_000);
  await h.drainWorker();
  const row = await rowOf(h, poisoned.tokenId);
  t.equal(row?.origin, 'poison.example');
  t.equal(await h.postgresUsedQuota(lic.firmaId), 3, 'used_quota counts it once');
  t.equal(await deadCount(h), 0, 'the dead-letter stream is empty');
  t.equal((await healthUntil(h, (hz) => hz.deadLetters === 0)).deadLetters, 0, '/healthz: none left');

  // replaying what is no longer there, or the same event once more, counts nothing again
  t.match(await cli(h, 'replay'), /replayed 0 /);
  await h.redis.xadd(stream, '*', ...(letter?.event ?? []));
  await h.drainWorker();
  t.equal(await h.postgresUsedQuota(lic.firmaId), 3, 'a second copy changes nothing');
  t.equal(await deadCount(h), 0);
});

/** Holds an exclusive lock on the harness's token tables (the sign_tokens view locks both) over the test's own connection until released. */
async function lockSignTokens(h: Harness): Promise<() => Promise<void>> {
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  let taken: () => void = () => {};
  const isTaken = new Promise<void>((resolve) => (taken = resolve));
  const holder = h.sql.begin(async (tx) => {
    await tx`lock table sign_tokens in access exclusive mode`;
    taken();
    await held;
  });
  await isTaken;
  return async () => {
    release();
    await holder;
  };
}

/** A harness whose Postgres goes through a CuttableProxy; extra URL parameters become session settings. */
async function startProxiedHarness(t: Teardown, label: string, settings: Record<string, string> = {}) {
  const { proxy, url } = await startPostgresProxy(t, settings); // registered first: closed after the harness has stopped
  const h = await startHarness(t, label, { ...LIVE_COUNTS, DATABASE_URL: url }, { logLevel: 'warn' });
  /** warnings with an error logged since h.logs[from] (the worker's "retrying") */
  const retriesSince = (from: number) => h.logs.slice(from).filter((l) => l.level === 40 && l.err !== undefined);
  return { h, proxy, retriesSince };
}

t.test('transient failures (Postgres unreachable, a lock not granted in time) are retried, never dead-lettered', async (t) => {
  // the service's own sessions give up waiting for a lock after 300 ms (SQLSTATE 55P03)
  const { h, proxy, retriesSince } = await startProxiedHarness(t, 'deadletters-down', { lock_timeout: '300' });
  const lic = await h.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(h, lic, 6, 0);
  await h.drainWorker();
  t.ok(proxy.connections > 0, 'the service talks to Postgres through the proxy');
  const [cutOff, locked] = [tokens.slice(0, 3), tokens.slice(3)];

  // 1. Postgres unreachable
  proxy.cut();
  for (const token of cutOff) t.equal((await h.validate(token, 'down.example')).status, 200);
  await sleep(1500);
  t.equal(await lag(h), 3, 'the redemptions wait in the stream');
  t.equal(await deadCount(h), 0, 'none is dead-lettered while Postgres is down');
  const down = await healthUntil(h, (hz) => hz.status === 503);
  t.equal(down.status, 503, '/healthz: Postgres down');
  t.equal(down.deadLetters, 0);
  proxy.restore();
  await waitFor('the redemptions land once Postgres is back', async () => (await h.postgresUsedQuota(lic.firmaId)) === 3, 15_000);
  await h.drainWorker();
  for (const token of cutOff) t.equal((await rowOf(h, claimsOf(token).token_id))?.status, 'used');
  t.equal(await deadCount(h), 0, 'the dead-letter stream stays empty');

  // 2. Postgres answers, but refuses for now: the token tables stay locked past the worker's lock_timeout
  const unlock = await lockSignTokens(h);
  try {
    const from = h.logs.length;
    for (const token of locked) t.equal((await h.validate(token, 'locked.example')).status, 200);
    // refused at least once: a retry logged with 55P03 (or, wrongly, a dead letter)
    await waitFor('the worker is refused the lock', async () =>
      retriesSince(from).some((l) => (l.err as { code?: string }).code === '55P03') || (await deadCount(h)) > 0, 5_000);
    await sleep(500);
    t.equal(await deadCount(h), 0, 'a lock timeout (55P03) is not a dead letter');
    t.equal(await lag(h), 3, 'the redemptions wait in the stream');
  } finally {
    await unlock();
  }
  await waitFor('the redemptions land once the lock is released', async () => (await h.postgresUsedQuota(lic.firmaId)) === 6, 15_000);
  await h.drainWorker();
  for (const token of locked) t.equal((await rowOf(h, claimsOf(token).token_id))?.status, 'used');
  t.equal(await deadCount(h), 0, 'the dead-letter stream stays empty');
  t.equal((await health(h)).deadLetters, 0);
});

t.test('a connection lost in the middle of the worker\'s write is retried, never dead-lettered (server process)', async (t) => {
  // the real server processes: a failure that escapes the worker's error handling ends its process
  const { h, proxy } = await startProxiedHarness(t, 'deadletters-midwrite');
  const { sql } = h;
  const retries = () => h.logs.filter((l) => l.level === 40 && l.err !== undefined);
  const died = () => h.logs.find((l) => l.msg === 'child died: restarting it');
  const fatal = () => h.logs.find((l) => (l.level as number) >= 50);

  const lic = await h.createLicense({ totalQuota: 10 });
  const { tokens } = await mintTokens(h, lic, 2, 0);
  await waitFor('the issuances are persisted', async () => (await lag(h)) === 0, 10_000);
  const [first, second] = tokens as [string, string];

  // the worker's transaction waits for a lock the test holds; the connection drops under it
  const unlock = await lockSignTokens(h);
  const before = retries().length;
  try {
    t.equal((await h.validate(first, 'midwrite.example')).status, 200);
    await waitFor('the worker is writing (waiting for the lock)', async () => {
      const [row] = await sql`select count(*)::int as n from pg_locks where relation in ('token_issues'::regclass, 'token_redemptions'::regclass) and not granted`;
      return (row?.n ?? 0) > 0;
    }, 5_000);
    proxy.cut();
  } finally {
    await unlock();
  }
  // one event alone in its batch: were a lost connection taken for a refusal, it would be a dead letter at once
  await waitFor('the worker sees its write fail', async () =>
    retries().length > before || (await deadCount(h)) > 0 || died() !== undefined, 5_000);
  await sleep(500);
  if (died()) {
    t.fail(`a server process died: ${JSON.stringify(died())}, ${JSON.stringify(fatal()?.err ?? fatal())}`);
    return;
  }
  t.equal(await deadCount(h), 0, `a lost connection is not a dead letter (${String((retries()[before]?.err as { code?: string } | undefined)?.code)})`);
  t.equal(await lag(h), 1, 'the redemption waits in the stream');
  proxy.restore();
  await waitFor('the redemption lands once Postgres is back', async () => (await h.postgresUsedQuota(lic.firmaId)) === 1, 15_000);
  t.equal((await rowOf(h, claimsOf(first).token_id))?.status, 'used');

  // and the server still serves and persists
  t.equal((await h.validate(second, 'after.example')).status, 200);
  await waitFor('a later redemption lands', async () => (await h.postgresUsedQuota(lic.firmaId)) === 2, 5_000);
  t.equal(await deadCount(h), 0);
  t.equal(fatal(), undefined, `nothing fatal logged (${JSON.stringify(fatal())})`);
});
