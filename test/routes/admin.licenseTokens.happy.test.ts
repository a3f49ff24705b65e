import t from 'tap';
import type { IssuedToken } from '../../src/cli/licensectl/output.js';
import { tokensStatement } from '../../src/licenses/listing.js';
import { startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { signOne, getTokenPair } from '../helpers/tokens.js';
import { pollUntil, sleep } from '../helpers/wait.js';

// GET /admin/v1/licenses/{licenseKey}/tokens?limit=&cursor=&status=: the license's issued
// sign tokens, newest first, each issued / used / expired, once the usage worker has
// written them to Postgres.

type Item = IssuedToken;

const FIELDS = ['expiresAt', 'imzaTipi', 'issuedAt', 'origin', 'status', 'tokenId', 'usedAt'];
const NO_LIMITS = { RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0', RATE_VALIDATE_PER_MIN: '0' };

t.test('license tokens', async (t) => {
  const h = await startHarness(t, 'admintokens', NO_LIMITS);
  const lic = await h.createLicense({ totalQuota: 20 });
  const other = await h.createLicense();
  // 5 tokens, a few ms apart (their issue time orders them); the 2nd and 4th redeemed
  const pair = await getTokenPair(h, lic, 1);
  const tokens = [pair.signToken];
  for (let i = 1; i < 5; i++) {
    await sleep(3);
    tokens.push(await signOne(h, pair.accessToken, i % 2));
  }
  const ids = tokens.map((tok) => claimsOf(tok).token_id);
  t.equal((await h.validate(tokens[1], 'https://imza.ornek.com.tr')).status, 200);
  t.equal((await h.validate(tokens[3])).status, 200);
  await getTokenPair(h, other); // another license's token: never listed here
  const list = (query = ''): ReturnType<typeof h.admin> => h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}/tokens${query}`);
  // the worker writes issues and redemptions after the fact: wait until they show
  const all = await pollUntil(() => list(), (res) => res.body?.data?.items?.filter((i: Item) => i.status === 'used').length === 2);

  t.test('every token, newest first, with its status and times', async (t) => {
    t.equal(all.status, 200, all.text);
    t.equal(all.headers.get('cache-control'), 'no-store');
    t.same(Object.keys(all.body.data).sort(), ['items', 'nextCursor']);
    const items = all.body.data.items as Item[];
    t.same(items.map((i) => i.tokenId), [...ids].reverse());
    t.same(items.map((i) => i.status), ['issued', 'used', 'issued', 'used', 'issued']);
    t.same(items.map((i) => i.imzaTipi), [0, 1, 0, 1, 1]);
    t.equal(all.body.data.nextCursor, null);
    for (const item of items) {
      t.same(Object.keys(item).sort(), FIELDS);
      const life = Date.parse(item.expiresAt as string) - Date.parse(item.issuedAt);
      t.ok(life > 299_000 && life <= 300_000, `expires 300 s after issue (exp in whole seconds): ${life}`);
      t.equal(item.usedAt === null, item.status !== 'used');
    }
    t.equal(items[3]?.origin, 'https://imza.ornek.com.tr', 'origin as sent');
    t.equal(items[1]?.origin, null);
    t.notMatch(all.text, /eyJ/, 'never a token itself');
  });

  t.test('?status= filters', async (t) => {
    const used = await list('?status=used');
    t.same((used.body.data.items as Item[]).map((i) => i.tokenId), [ids[3], ids[1]]);
    const issued = await list('?status=issued');
    t.same((issued.body.data.items as Item[]).map((i) => i.tokenId), [ids[4], ids[2], ids[0]]);
    const expired = await list('?status=expired');
    t.same(expired.body.data, { items: [], nextCursor: null });
  });

  t.test('a token unused past its expiry is expired', async (t) => {
    // what the worker writes for a token issued 10 minutes ago (sign tokens live 300 s)
    const id = '00000000-0000-4000-8000-000000000001';
    await h.sql`insert into token_issues (token_id, firma_id, imza_tipi, issued_at, expires_at)
      values (${id}, ${lic.firmaId}, 0, now() - interval '10 minutes', now() - interval '5 minutes')`;
    const res = await list('?status=expired');
    t.same((res.body.data.items as Item[]).map((i) => [i.tokenId, i.status]), [[id, 'expired']]);
    const everything = await list();
    t.equal((everything.body.data.items as Item[]).at(-1)?.tokenId, id, 'oldest last');
  });

  t.test('limit 2: pages of 2, 2, 2 holding every token once, newest first', async (t) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list(cursor === null ? '?limit=2' : `?limit=2&cursor=${cursor}`);
      t.equal(res.status, 200, res.text);
      seen.push(...(res.body.data.items as Item[]).map((i) => i.tokenId));
      cursor = res.body.data.nextCursor as string | null;
      pages++;
    } while (cursor !== null && pages < 10);
    t.equal(pages, 3);
    t.same(seen, [...[...ids].reverse(), '00000000-0000-4000-8000-000000000001']);
    const usedPages = await list('?status=used&limit=1');
    const next = await list(`?status=used&limit=1&cursor=${usedPages.body.data.nextCursor}`);
    t.same([usedPages.body.data.items[0].tokenId, next.body.data.items[0].tokenId], [ids[3], ids[1]], 'a filter pages too');
    t.equal(next.body.data.nextCursor, null);
  });

  t.test('a license without tokens: an empty list', async (t) => {
    const fresh = await h.createLicense();
    t.same((await h.admin('GET', `/admin/v1/licenses/${fresh.licenseKey}/tokens`)).body, { success: true, data: { items: [], nextCursor: null } });
    const upper = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey.toUpperCase()}/tokens?limit=1`);
    t.equal(upper.body.data.items[0]?.tokenId, ids[4], 'the key in any case');
  });
});

t.test('the token list of a license with many tokens reads an index', async (t) => {
  const h = await startHarness(t, 'admintokensplan');
  const lic = await h.createLicense();
  // 100,000 issued tokens, as the worker writes them: half the license's, half of 40 others;
  // their ids UUIDs of version 7 (src/tokens/tokenId.ts), the issue time in ms first, which
  // puts each in the partition of its issue day (sql/009)
  await h.sql`insert into token_issues (token_id, firma_id, imza_tipi, issued_at, expires_at)
    select substr(x, 1, 8) || '-' || substr(x, 9, 4) || '-7' || substr(x, 13, 3) || '-8' || substr(x, 16, 3) || '-' || substr(x, 19, 12),
           case when n % 2 = 0 then ${lic.firmaId} else 'firma' || (n % 40) end, 0, at, at + interval '300 seconds'
    from generate_series(1, 100000) n,
      lateral (select now() - n * interval '1 second' as at) a,
      lateral (select lpad(to_hex((extract(epoch from at) * 1000)::int8), 12, '0') || md5(n::text || random()::text) as x) i`;
  await h.sql`analyze token_issues`;
  const res = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}/tokens?limit=3`);
  t.equal(res.body.data.items.length, 3);
  // some redeemed, as the worker writes them
  await h.sql`insert into token_redemptions (token_id, firma_id, imza_tipi, used_at, issued_at)
    select token_id::uuid, firma_id, 0, issued_at + interval '1 second', issued_at from token_issues where random() < 0.3`;
  await h.sql`analyze token_redemptions`;
  // the tables are partitioned by day (sql/009): a partition with no row is read as it costs
  // least, by a scan of nothing; those holding the rows must be read by index
  const held = await h.sql`select distinct tableoid::regclass::text as part from token_issues
    union select distinct tableoid::regclass::text from token_redemptions`;
  const scannedWhole = new RegExp(`Seq Scan on (${held.map((r) => r.part as string).join('|')}) `);
  for (const [hasCursor, hasStatus] of [[false, false], [true, false], [false, true], [true, true]] as const) {
    const params: unknown[] = [lic.firmaId, 51];
    if (hasCursor) params.push(String(Date.now() * 1000), 'z');
    if (hasStatus) params.push('used');
    const plan = await h.sql.unsafe(`explain ${tokensStatement(hasCursor, hasStatus)}`, params as never[]);
    const text = plan.map((r) => r['QUERY PLAN'] as string).join('\n');
    t.match(text, /Index Scan using token_issues_\w*(by_license|firma_id_issued_at_idx)/, `cursor ${hasCursor}, status ${hasStatus}: ${text}`);
    t.match(text, /Index Scan using token_redemptions_\w*pkey/, 'each redemption by its key (in its day\'s partition)');
    t.notMatch(text, scannedWhole, 'no sequential scan of a partition holding rows');
  }
});
