import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness, type Answer, type Harness } from '../helpers/harness.js';
import { type Asserts, expectCodedError } from '../helpers/auth.js';

// get-token under a flood: failed attempts are limited per client address (TRUST_PROXY
// decides whether X-Forwarded-For names it), unknown license keys are remembered in Redis
// so a spray of them stays off Postgres (and an admin create lifts that at once), an unknown
// key takes about as long as a wrong password, the hashing queue is bounded (503 with
// Retry-After past it), and a real customer is still served while all that goes on.

const RATE_MESSAGE = 'Çok fazla istek. Lütfen bekleyiniz.';

function getTokenFrom(h: Harness, forwardedFor: string | null, licenseKey: string, password: string, imzaTipi = 0): Promise<Answer> {
  const headers: Record<string, string> = forwardedFor === null ? {} : { 'x-forwarded-for': forwardedFor };
  return h.request('POST', '/api/v1/auth/get-token', { licenseKey, password, imzaTipi }, headers);
}

/** The published 429: Retry-After in whole seconds, body {success:false, message, retryAfter}. */
function expectRateLimited(t: Asserts, res: Answer, what: string): void {
  t.equal(res.status, 429, `${what}: 429 (${res.text})`);
  const header = res.headers.get('retry-after');
  t.ok(header !== null && /^\d+$/.test(header), `${what}: Retry-After whole seconds (${header})`);
  const seconds = Number(header);
  t.ok(seconds >= 1 && seconds <= 60, `${what}: Retry-After within 1..60 (${seconds})`);
  t.same(res.body, { success: false, message: RATE_MESSAGE, retryAfter: seconds }, `${what}: {success, message, retryAfter}`);
}

/** The 503 of get-token: {success:false, error:{code:'SERVICE_UNAVAILABLE', message}} with Retry-After. */
function expectUnavailable(t: Asserts, res: Answer, what: string): void {
  expectCodedError(t, res, 503, 'SERVICE_UNAVAILABLE');
  const header = res.headers.get('retry-after');
  t.ok(header !== null && /^\d+$/.test(header) && Number(header) >= 1, `${what}: Retry-After whole seconds (${header})`);
}

function randomAddress(): string {
  const b = randomBytes(3);
  return `10.${b[0]}.${b[1]}.${b[2]}`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

async function timed(fn: () => Promise<Answer>): Promise<{ ms: number; res: Answer }> {
  const started = performance.now();
  const res = await fn();
  return { ms: performance.now() - started, res };
}

/** Puts a license row straight into Postgres (bypassing the admin API), copied from an existing one. */
async function insertDirectly(h: Harness, licenseKey: string, copyOf: string): Promise<string> {
  const firmaId = randomBytes(9).toString('base64url');
  const inserted = await h.sql`
    insert into licenses (firma_id, license_key, organization_name, password_hash, total_quota, used_quota,
                          expiry_date, is_active, domains)
    select ${firmaId}, ${licenseKey}, organization_name, password_hash, total_quota, 0, expiry_date, is_active, domains
    from licenses where license_key = ${copyOf}
    returning firma_id`;
  if (inserted.length !== 1) throw new Error('insertDirectly: no row copied');
  return firmaId;
}

t.test('failed get-tokens per client address, TRUST_PROXY=1', async (t) => {
  const h = await startHarness(t, 'flood-xff', {
    ...NO_RATE_LIMITS, TRUST_PROXY: '1', RATE_GET_TOKEN_FAILURES_PER_MIN: '5',
  });
  const lic = await h.createLicense();
  const flooder = '203.0.113.7';

  t.test('the 6th failure from one forwarded address is refused with 429', async (t) => {
    for (let i = 0; i < 5; i++) {
      // alternate unknown keys and wrong passwords: both count
      const res = i % 2 === 0
        ? await getTokenFrom(h, flooder, randomUUID(), 'guess')
        : await getTokenFrom(h, flooder, lic.licenseKey, `wrong-${i}`);
      expectCodedError(t, res, 401, 'INVALID_CREDENTIALS');
    }
    expectRateLimited(t, await getTokenFrom(h, flooder, lic.licenseKey, 'wrong-6'), '6th failure');
    expectRateLimited(t, await getTokenFrom(h, flooder, randomUUID(), 'guess'), '7th (unknown key)');
    expectRateLimited(t, await getTokenFrom(h, flooder, lic.licenseKey, lic.password), 'even the right password, before any lookup');
    // the proxy appends the real peer on the right: whatever the client puts left of it is not trusted
    expectRateLimited(t, await getTokenFrom(h, `198.51.100.99, ${flooder}`, lic.licenseKey, 'x'), 'a spoofed left-hand entry');

    const key = `${h.prefix}:{a:${flooder}}:fg`;
    t.equal(await h.redis.get(key), '5', `counted in ${key}: 5 failures (refused attempts are not failures)`);
    const ttl = await h.redis.pttl(key);
    t.ok(ttl > 0 && ttl <= 60_000, `the counter expires within the minute (${ttl} ms)`);
    t.equal(await h.redis.exists(`${h.prefix}:{a:127.0.0.1}:fg`), 0, 'nothing counted against the proxy (127.0.0.1)');
  });

  t.test('another forwarded address is unaffected', async (t) => {
    const other = '198.51.100.23';
    expectCodedError(t, await getTokenFrom(h, other, lic.licenseKey, 'wrong'), 401, 'INVALID_CREDENTIALS');
    const ok = await getTokenFrom(h, other, lic.licenseKey, lic.password);
    t.equal(ok.status, 200, `right password from ${other}: 200 (${ok.text})`);
    t.equal(ok.body?.success, true);
    const ok2 = await getTokenFrom(h, `${flooder}, ${other}`, lic.licenseKey, lic.password);
    t.equal(ok2.status, 200, 'the right-most hop is the client: the flooder on its left does not matter');
  });

  // Each attempt takes its slot before any work (lua/failures.lua), so attempts sent
  // together are held to the limit as well as attempts sent one after another.
  t.test('a concurrent burst from one address is held to the limit too', async (t) => {
    const burster = '203.0.113.50';
    const answers = await Promise.all(Array.from({ length: 20 }, () => getTokenFrom(h, burster, randomUUID(), 'guess')));
    const looked = answers.filter((a) => a.status === 401).length;
    const limited = answers.filter((a) => a.status === 429).length;
    t.equal(looked + limited, 20, `only 401 and 429 (${looked} + ${limited})`);
    t.ok(looked <= 5, `at most 5 of 20 concurrent failures were looked up (${looked})`);
    expectRateLimited(t, await getTokenFrom(h, burster, randomUUID(), 'guess'), 'after the burst');
  });
});

t.test('TRUST_PROXY=0 (default): X-Forwarded-For is ignored, every failure counts for the peer', async (t) => {
  const h = await startHarness(t, 'flood-noxff', { ...NO_RATE_LIMITS, RATE_GET_TOKEN_FAILURES_PER_MIN: '5' });
  const lic = await h.createLicense();
  for (let i = 0; i < 5; i++) {
    // a new forwarded address every time: it must not help
    expectCodedError(t, await getTokenFrom(h, `203.0.113.${10 + i}`, lic.licenseKey, `wrong-${i}`), 401, 'INVALID_CREDENTIALS');
  }
  expectRateLimited(t, await getTokenFrom(h, '203.0.113.99', lic.licenseKey, 'wrong'), '6th failure, yet another forwarded address');
  expectRateLimited(t, await getTokenFrom(h, null, lic.licenseKey, lic.password), 'no header, right password');
  t.equal(await h.redis.get(`${h.prefix}:{a:127.0.0.1}:fg`), '5', 'all counted for 127.0.0.1');
  const forwarded = await h.redis.keys(`${h.prefix}:{a:203.*`);
  t.same(forwarded, [], 'nothing counted for a forwarded address');
});

t.test('unknown license keys: negative cache and timing', async (t) => {
  const h = await startHarness(t, 'flood-unknown', {
    ...NO_RATE_LIMITS, QUOTA_CACHE_SECONDS: '0', RATE_GET_TOKEN_FAILURES_PER_MIN: '0',
  });
  const lic = await h.createLicense({ totalQuota: 100 });
  const marker = (key: string): string => `${h.prefix}:{k:${key}}:u`;
  /** What an admin change on another instance does: the key is announced on the invalidation channel. */
  const announce = async (key: string): Promise<void> => {
    await h.redis.publish(`${h.prefix}:invalidate`, key);
    await new Promise((r) => setTimeout(r, 100));
  };

  t.test('get-token: a key no license has costs no Postgres look-up and no Redis memory', async (t) => {
    const key = randomUUID();
    expectCodedError(t, await h.getToken(key, lic.password), 401, 'INVALID_CREDENTIALS');
    // the license now exists in Postgres, but was not made through any instance's admin API
    await insertDirectly(h, key, lic.licenseKey);
    expectCodedError(t, await h.getToken(key, lic.password), 401, 'INVALID_CREDENTIALS');
    t.equal(await h.redis.exists(`${h.prefix}:{k:${key}}:c`), 0, 'no credentials were loaded: Postgres was not asked');
    t.equal(await h.redis.exists(marker(key)), 0, 'and nothing was written to Redis for it');
    await announce(key);
    const found = await h.getToken(key, lic.password);
    t.equal(found.status, 200, `once announced, the row is found (${found.text})`);
  });

  t.test('get-token: a known key Postgres lacks is remembered; while it is, Postgres is not asked', async (t) => {
    const key = randomUUID();
    await announce(key); // known, yet not in Postgres: the look-up finds nothing
    expectCodedError(t, await h.getToken(key, lic.password), 401, 'INVALID_CREDENTIALS');
    t.equal(await h.redis.exists(marker(key)), 1, `the marker ${marker(key)} is set`);
    const ttl = await h.redis.pttl(marker(key));
    t.ok(ttl > 0 && ttl <= 60_000, `with a TTL of at most 60 s (${ttl} ms)`);

    // the license now exists in Postgres, but not through the admin API: only a lookup would find it
    await insertDirectly(h, key, lic.licenseKey);
    expectCodedError(t, await h.getToken(key, lic.password), 401, 'INVALID_CREDENTIALS');
    t.equal(await h.redis.exists(`${h.prefix}:{k:${key}}:c`), 0, 'no credentials were loaded: Postgres was not asked');

    await h.redis.del(marker(key));
    const found = await h.getToken(key, lic.password);
    t.equal(found.status, 200, `marker gone: the row is found (${found.text})`);
    t.equal(found.body?.success, true);
  });

  t.test('an admin create of a remembered key clears the marker: the license works at once', async (t) => {
    const key = randomUUID();
    await announce(key);
    expectCodedError(t, await h.getToken(key, 'yeni-parola'), 401, 'INVALID_CREDENTIALS');
    t.equal(await h.redis.exists(marker(key)), 1, 'marker set');
    const created = await h.createLicense({ licenseKey: key, password: 'yeni-parola' });
    t.equal(created.licenseKey, key);
    t.equal(await h.redis.exists(marker(key)), 0, 'marker cleared by the create');
    const got = await h.getToken(key, 'yeni-parola');
    t.equal(got.status, 200, `get-token right after the create: 200 (${got.text})`);
    const quota = await h.checkQuota(key);
    t.equal(quota.status, 200, `check-quota right after the create: 200 (${quota.text})`);
  });

  t.test('check-quota: an unknown key is 404 and stays so while remembered', async (t) => {
    const key = randomUUID();
    await announce(key);
    const first = await h.checkQuota(key);
    t.equal(first.status, 404, `404 (${first.text})`);
    t.equal(first.body?.error?.code, 'LICENSE_NOT_FOUND');
    t.equal(await h.redis.exists(marker(key)), 1, 'marker set by check-quota too');
    await insertDirectly(h, key, lic.licenseKey);
    const second = await h.checkQuota(key);
    t.equal(second.status, 404, `row present in Postgres, still 404 while marked (${second.text})`);
    t.equal(second.body?.error?.code, 'LICENSE_NOT_FOUND');
    await h.redis.del(marker(key));
    const third = await h.checkQuota(key);
    t.equal(third.status, 200, `marker gone: 200 (${third.text})`);
  });

  t.test('an unknown key takes about as long as a wrong password', async (t) => {
    // warm up: the hasher has run and recent verification times are known
    for (let i = 0; i < 3; i++) await h.getToken(lic.licenseKey, 'warm-up');
    await h.getToken(randomUUID(), 'warm-up');
    const wrong: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 10; i++) {
      const w = await timed(() => h.getToken(lic.licenseKey, `wrong-${i}`));
      t.equal(w.res.status, 401);
      wrong.push(w.ms);
      const u = await timed(() => h.getToken(randomUUID(), `wrong-${i}`));
      t.equal(u.res.status, 401);
      unknown.push(u.ms);
    }
    const mw = median(wrong);
    const mu = median(unknown);
    const ratio = mu / mw;
    t.ok(ratio >= 0.5 && ratio <= 2, `median unknown key ${mu.toFixed(1)} ms vs wrong password ${mw.toFixed(1)} ms: ratio ${ratio.toFixed(2)} within 0.5..2`);
  });
});

t.test('the hashing queue is bounded: 503 with Retry-After past PASSWORD_QUEUE_MAX', async (t) => {
  const h = await startHarness(t, 'flood-queue', {
    ...NO_RATE_LIMITS, RATE_GET_TOKEN_FAILURES_PER_MIN: '0', PASSWORD_QUEUE_MAX: '2',
  });
  const lic = await h.createLicense();
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => h.getToken(lic.licenseKey, `wrong-${i}`)));
  const byStatus = new Map<number, number>();
  for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
  const summary = JSON.stringify(Object.fromEntries(byStatus));
  const shed = answers.filter((a) => a.status === 503);
  const refused = answers.filter((a) => a.status === 401);
  t.ok(shed.length > 0, `some were shed with 503 (${summary})`);
  t.ok(refused.length > 0, `some were hashed and refused with 401 (${summary})`);
  t.equal(shed.length + refused.length, 40, `nothing but 401 and 503 (${summary})`);
  for (const a of shed) expectUnavailable(t, a, '503');
  for (const a of refused) expectCodedError(t, a, 401, 'INVALID_CREDENTIALS');
  const after = await h.getToken(lic.licenseKey, lic.password);
  t.equal(after.status, 200, `afterwards the right password answers 200 (${after.text})`);
});

t.test('a real customer is served during a flood of unknown keys', async (t) => {
  const h = await startHarness(t, 'flood-customer', { TRUST_PROXY: '1' });
  const lic = await h.createLicense();
  const flood = Promise.all(Array.from({ length: 200 }, () => getTokenFrom(h, randomAddress(), randomUUID(), 'guess')));
  await new Promise((r) => setTimeout(r, 20)); // the flood is in flight
  const customer = await getTokenFrom(h, '192.0.2.10', lic.licenseKey, lic.password);
  const answers = await flood;
  t.equal(customer.status, 200, `the customer's get-token: 200 (${customer.text})`);
  t.equal(customer.body?.success, true);
  const statuses = new Map<number, number>();
  for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
  const summary = JSON.stringify(Object.fromEntries(statuses));
  t.equal(answers.filter((a) => a.status >= 500).length, 0, `no 5xx in the flood (${summary})`);
  t.equal(answers.filter((a) => a.status === 401).length, 200, `every flood request: 401 (${summary})`);
  const again = await getTokenFrom(h, '192.0.2.10', lic.licenseKey, lic.password, 1);
  t.equal(again.status, 200, 'and after it');
});

