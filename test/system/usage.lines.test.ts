import { pino } from 'pino';
import t from 'tap';
import { batchCall, redeemLayout, type Redemption } from '../../src/redis/batchScripts.js';
import { createRedis } from '../../src/redis/client.js';
import { bucketOf } from '../../src/redis/keys.js';
import { Outcome } from '../../src/redis/outcomes.js';
import { runScript } from '../../src/redis/scriptCall.js';
import { GROUP } from '../../src/usage/ack.js';
import { entryEvents, forfeitOf, redemptionOf } from '../../src/usage/events.js';
import { LineReaders, READS_LINES } from '../../src/usage/lineReaders.js';
import { ADMIN_TOKEN, LIVE_COUNTS, startHarness, type TestLicense } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { spawnWorker } from '../helpers/processes.js';
import { mintTokens } from '../helpers/tokens.js';

// A redeem call's redemptions as one usage-stream entry, a line each (lua/includes/spentEntry.lua):
// written only while every reader of the streams takes such entries (src/usage/lineReaders.ts),
// in the stream's order with the call's other events, and counted once each in Postgres.

const h = await startHarness(t, 'lines', { ...LIVE_COUNTS, RUN_WORKER: '0' });
// a client the scripts are defined on (the harness's own is a plain one)
const scripted = createRedis(h.config, 'test-lines');
t.teardown(() => scripted.quit());
const silent = pino({ level: 'silent' });
const HOUR_MS = 3_600_000;

t.test('lines are on only while every reader of the streams takes them', async (t) => {
  const readers = new LineReaders(scripted, h.keys, silent);
  t.equal(await readers.refresh(), false, 'no group yet (no worker has run here): off');
  for (const s of h.keys.streams) await h.redis.xgroup('CREATE', s, GROUP, '0', 'MKSTREAM');
  t.equal(await readers.refresh(), true, 'groups without consumers: on');
  const first = h.keys.streams[0] as string;
  // a consumer is in the group once it has been handed an entry, as if so here
  await h.redis.xgroup('CREATECONSUMER', first, GROUP, `host-1-abcdef${READS_LINES}`);
  t.equal(await readers.refresh(), true, 'a consumer that reads lines: on');
  await h.redis.xgroup('CREATECONSUMER', h.keys.streams[5] as string, GROUP, 'host-2-abcdef');
  t.equal(await readers.refresh(), false, 'a consumer of an earlier release, reading now: off');
  t.equal(readers.on, false, 'and what the redeem calls read says so');
  await h.redis.xgroup('DELCONSUMER', h.keys.streams[5] as string, GROUP, 'host-2-abcdef');
  t.equal(await readers.refresh(), true, 'that consumer gone: on again');
});

/** A redemption of `token` as the route makes it, for a call of redeem.lua driven by the test's clock. */
function item(token: string): Redemption {
  const c = claimsOf(token);
  const k = h.keys.forLicense(c.firma_id);
  return {
    keys: k, markers: k.markers(c.exp * 1000).key, limit: 0, host: '', tokenId: c.token_id, firmaId: c.firma_id, imzaTipi: c.imza_tipi,
    iatMs: c.iat * 1000, origin: null, idempotency: null, receiptPrefix: '',
  };
}

async function usedOf(firmaId: string): Promise<{ used: number; forfeited: number } | undefined> {
  const [row] = await h.sql<{ used: number; forfeited: number }[]>`
    select used_quota::int as used, forfeited_quota::int as forfeited from licenses where firma_id = ${firmaId}`;
  return row;
}

t.test('a call of several redemptions is one entry; a forfeit among them keeps its place; Postgres counts each once', async (t) => {
  // two licenses of one slot (a call holds one slot's tokens); the second's package expires
  // at the call's time, so its redemption forfeits it first, between the call's redemptions
  const a = await h.createLicense({ totalQuota: 10 });
  let b: TestLicense = await h.createLicense({ totalQuota: 10 });
  while (bucketOf(b.firmaId) !== bucketOf(a.firmaId)) b = await h.createLicense({ totalQuota: 10 });
  const expiry = Date.now() + HOUR_MS;
  const bought = await h.request('POST', `/admin/v1/licenses/${b.licenseKey}/quota`, { add: 2, expiresAt: new Date(expiry).toISOString() },
    { authorization: `Bearer ${ADMIN_TOKEN}` });
  t.equal(bought.status, 200, 'the second license bought a package of 2 expiring in an hour');
  const [a1, a2, a3] = (await mintTokens(h, a, 3, 0)).tokens as [string, string, string];
  const [b1, b2] = (await mintTokens(h, b, 2, 0)).tokens as [string, string];
  const stream = h.keys.forLicense(a.firmaId).stream;
  const before = (await h.redis.xrange(stream, '-', '+')).length;

  const call = (tokens: string[], lines: boolean) => runScript(scripted, batchCall(redeemLayout, tokens.map(item), expiry, 60_000, 0, lines));
  t.same((await call([a1, b1, a2], true)).map((r) => r[0]), [Outcome.DONE, Outcome.DONE, Outcome.DONE], 'three redeemed in one call, lines on');
  t.same((await call([a3, b2], false)).map((r) => r[0]), [Outcome.DONE, Outcome.DONE], 'two in another, lines off');

  const entries = (await h.redis.xrange(stream, '-', '+')).slice(before).map(([, fields]) => entryEvents(fields).map((one) => {
    const spent = redemptionOf(one);
    const forfeit = forfeitOf(one);
    return spent ? `spent ${spent.tokenId}` : forfeit ? `forfeit ${forfeit.firmaId} ${forfeit.packageNo} ${forfeit.units}` : 'other';
  }));
  const id = (token: string) => claimsOf(token).token_id;
  t.same(entries, [
    [`spent ${id(a1)}`],
    [`forfeit ${b.firmaId} 2 2`],
    [`spent ${id(b1)}`, `spent ${id(a2)}`],
    [`spent ${id(a3)}`],
    [`spent ${id(b2)}`],
  ], 'lines on: the redemption before the forfeit is written before it, the two after it share an entry; lines off: an entry each');

  await spawnWorker(t, h.workerEnv());
  await h.drainWorker();
  t.same(await usedOf(a.firmaId), { used: 3, forfeited: 0 }, 'Postgres counts the first license\'s three redemptions once each');
  t.same(await usedOf(b.firmaId), { used: 2, forfeited: 2 }, 'and the second\'s two, after its package\'s forfeit');
  const [pending] = await h.redis.xpending(stream, GROUP) as [number];
  t.equal(pending, 0, 'nothing left pending');
});

