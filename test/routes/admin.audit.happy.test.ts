import t from 'tap';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';
import { adminFrom, auditRows, BOB_TOKEN, TWO_ADMINS } from '../helpers/audit.js';
import { createBody, PASSWORD } from '../helpers/admin.js';

// The admin audit log: every admin change (create, PATCH of any field, a credited purchase)
// leaves exactly one record, with the fields before and after, the admin's name, the
// client's address and the Idempotency-Key; a secret only ever reads "changed". GET
// /admin/v1/audit lists them newest first, by license and since an instant, in pages.

const SECRET = 'webhook-signing-secret-42';
const SECRET2 = 'another-webhook-secret-43';
const NEW_PASSWORD = 'a-brand-new-password-44';

t.test('admin audit log', async (t) => {
  const h = await startHarness(t, 'adminaudit', { ...TWO_ADMINS, WEBHOOK_ALLOW_PRIVATE_NETWORKS: '0' });

  let key = '';
  t.test('a create: one record, every field after, secrets as "changed"', async (t) => {
    const res = await adminFrom(h, '198.51.100.7', 'POST', '/admin/v1/licenses', createBody({
      domains: ['ornek.com.tr'], webhookUrl: 'https://hooks.example.com/imza', webhookSecret: SECRET,
    }));
    t.equal(res.status, 201, res.text);
    key = res.body.data.licenseKey as string;
    const rows = await auditRows(h, key);
    t.equal(rows.length, 1, 'exactly one record');
    const [row] = rows;
    t.match(row, { license_key: key, action: 'create', before: null, admin: 'admin', address: '198.51.100.7', idempotency_key: null });
    t.same(row?.after, {
      organizationName: 'Örnek Eczane Ltd.', password: 'changed', totalQuota: 5, expiryDate: res.body.data.expiryDate, isActive: true,
      domains: ['ornek.com.tr'], webhookUrl: 'https://hooks.example.com/imza', webhookSecret: 'changed',
      rateLimits: { getToken: null, signToken: null, validate: null, checkQuota: null },
      releasesPerDay: 0,
    }, 'every field of the new license, the secrets as "changed", the limits as one field');
    t.ok(Math.abs((row?.at.getTime() ?? 0) - Date.now()) < 60_000, 'when: the server\'s time');
  });

  t.test('a PATCH by another admin: the fields that changed, before and after', async (t) => {
    const res = await adminFrom(h, '203.0.113.9', 'PATCH', `/admin/v1/licenses/${key}`, {
      isActive: false, domains: ['ornek.com.tr', '*.ornek.com.tr'], organizationName: 'Örnek Eczane Ltd.', password: NEW_PASSWORD,
    }, {}, BOB_TOKEN);
    t.equal(res.status, 200, res.text);
    const rows = await auditRows(h, key);
    t.equal(rows.length, 2, 'one more record');
    t.match(rows[1], { action: 'update', admin: 'bob', address: '203.0.113.9', idempotency_key: null });
    t.same(rows[1]?.before, { isActive: true, domains: ['ornek.com.tr'], password: 'changed' }, 'an unchanged field (the same name) is left out');
    t.same(rows[1]?.after, { isActive: false, domains: ['ornek.com.tr', '*.ornek.com.tr'], password: 'changed' });
  });

  t.test('a PATCH of the expiry and of the webhook', async (t) => {
    const expiryDate = '2031-06-30T12:00:00.000Z';
    const before = (await h.admin('GET', `/admin/v1/licenses/${key}`)).body.data.expiryDate;
    t.equal((await adminFrom(h, '192.0.2.1', 'PATCH', `/admin/v1/licenses/${key}`, { expiryDate })).status, 200);
    t.equal((await adminFrom(h, '192.0.2.1', 'PATCH', `/admin/v1/licenses/${key}`, { webhookUrl: 'https://hooks.example.com/v2', webhookSecret: SECRET2 })).status, 200);
    t.equal((await adminFrom(h, '192.0.2.1', 'PATCH', `/admin/v1/licenses/${key}`, { webhookSecret: SECRET })).status, 200);
    t.equal((await adminFrom(h, '192.0.2.1', 'PATCH', `/admin/v1/licenses/${key}`, { webhookUrl: null })).status, 200);
    const rows = (await auditRows(h, key)).slice(2);
    t.same(rows.map((r) => [r.action, r.before, r.after]), [
      ['update', { expiryDate: before }, { expiryDate }],
      ['update', { webhookUrl: 'https://hooks.example.com/imza', webhookSecret: 'changed' }, { webhookUrl: 'https://hooks.example.com/v2', webhookSecret: 'changed' }],
      ['update', { webhookSecret: 'changed' }, { webhookSecret: 'changed' }],
      ['update', { webhookUrl: 'https://hooks.example.com/v2', webhookSecret: 'changed' }, { webhookUrl: null, webhookSecret: null }],
    ], 'each change: its fields; a removed secret reads null after');
    t.ok(rows.every((r) => r.admin === 'admin' && r.address === '192.0.2.1'));
  });

  t.test('a PATCH that changes nothing is recorded with no fields', async (t) => {
    const count = (await auditRows(h, key)).length;
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${key}`, { isActive: false })).status, 200);
    const rows = await auditRows(h, key);
    t.equal(rows.length, count + 1, 'the request was a change made (the license\'s version moved): recorded');
    t.same([rows.at(-1)?.before, rows.at(-1)?.after], [{}, {}], 'with nothing that differs');
  });

  t.test('a purchase: the quota before and after, with its Idempotency-Key; a replay records nothing', async (t) => {
    const lic = await h.createLicense({ totalQuota: 5 });
    const path = `/admin/v1/licenses/${lic.licenseKey}/quota`;
    t.equal((await adminFrom(h, '198.51.100.20', 'POST', path, { add: 4 }, { 'idempotency-key': 'order-7' }, BOB_TOKEN)).status, 200);
    const replay = await adminFrom(h, '198.51.100.20', 'POST', path, { add: 4 }, { 'idempotency-key': 'order-7' }, BOB_TOKEN);
    t.equal(replay.body.replayed, true);
    t.equal((await adminFrom(h, '198.51.100.21', 'POST', path, { add: 1 })).status, 200);
    const rows = await auditRows(h, lic.licenseKey);
    t.same(rows.map((r) => [r.action, r.before, r.after, r.admin, r.address, r.idempotency_key]), [
      ['create', null, rows[0]?.after, 'admin', '127.0.0.1', null],
      ['add-quota', { totalQuota: 5 }, { totalQuota: 9 }, 'bob', '198.51.100.20', 'order-7'],
      ['add-quota', { totalQuota: 9 }, { totalQuota: 10 }, 'admin', '198.51.100.21', null],
    ], 'the create, the purchase once (not its replay), the purchase without a key');
  });

  t.test('concurrent changes: each record\'s before is the previous one\'s after (the row is locked from the first read)', async (t) => {
    const lic = await h.createLicense({ totalQuota: 5 });
    const path = `/admin/v1/licenses/${lic.licenseKey}/quota`;
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      adminFrom(h, '198.51.100.30', 'POST', path, { add: 1 }, {}, i % 2 === 0 ? ADMIN_TOKEN : BOB_TOKEN)));
    t.same(answers.map((a) => a.status), Array(10).fill(200));
    const rows = (await auditRows(h, lic.licenseKey)).filter((r) => r.action === 'add-quota');
    t.equal(rows.length, 10, 'one record per purchase');
    t.same(rows.map((r) => [r.before?.totalQuota, r.after.totalQuota]), Array.from({ length: 10 }, (_, i) => [5 + i, 6 + i]), 'a chain, in the order written');
    t.same(rows.map((r) => r.admin).sort(), [...Array(5).fill('admin'), ...Array(5).fill('bob')]);
  });

  t.test('secrets never appear, neither in Postgres nor in the answers', async (t) => {
    const [dump] = await h.sql`select coalesce(json_agg(a)::text, '') as text from admin_audit a`;
    const listed = await h.admin('GET', '/admin/v1/audit?limit=500');
    const hashes = (await h.sql`select password_hash from licenses`).map((r) => r.password_hash as string);
    for (const text of [dump?.text as string, listed.text]) {
      for (const secret of [PASSWORD, NEW_PASSWORD, SECRET, SECRET2, 'correct horse battery staple', ADMIN_TOKEN, BOB_TOKEN, ...hashes]) {
        t.notOk(text.includes(secret), `never ${secret.slice(0, 12)}…`);
      }
      t.notMatch(text, /argon2|passwordHash|password_hash/);
    }
  });

  t.test('GET /admin/v1/audit: newest first, the records as Postgres holds them', async (t) => {
    const rows = await auditRows(h);
    const res = await h.admin('GET', '/admin/v1/audit?limit=500');
    t.equal(res.status, 200, res.text);
    t.equal(res.headers.get('cache-control'), 'no-store');
    t.same(Object.keys(res.body.data).sort(), ['items', 'nextCursor']);
    t.equal(res.body.data.nextCursor, null);
    t.same(res.body.data.items, [...rows].reverse().map((r) => ({
      id: r.id, at: r.at.toISOString(), licenseKey: r.license_key, action: r.action, before: r.before, after: r.after,
      admin: r.admin, address: r.address, idempotencyKey: r.idempotency_key,
    })), 'every record, newest first');
  });

  t.test('filters and pages', async (t) => {
    const byKey = await h.admin('GET', `/admin/v1/audit?licenseKey=${key.toUpperCase()}`);
    t.equal(byKey.status, 200, byKey.text);
    const ofKey = (await auditRows(h, key)).reverse().map((r) => r.id);
    t.same(byKey.body.data.items.map((r: { id: number }) => r.id), ofKey, 'one license\'s, any case of its key');
    const unknown = await h.admin('GET', '/admin/v1/audit?licenseKey=00000000-0000-4000-8000-000000000000');
    t.same(unknown.body, { success: true, data: { items: [], nextCursor: null } }, 'a key with no record: none');

    const all = await auditRows(h);
    const third = all[2] as { at: Date; id: number };
    const since = await h.admin('GET', `/admin/v1/audit?since=${encodeURIComponent(third.at.toISOString())}&limit=500`);
    const expected = all.filter((r) => r.at.getTime() >= third.at.getTime()).reverse().map((r) => r.id);
    t.ok(all.every((r, i) => i === 0 || r.at.getTime() >= (all[i - 1] as { at: Date }).at.getTime()), 'written in time order (each change at its own time)');
    t.same(since.body.data.items.map((r: { id: number }) => r.id), expected, 'since: that instant and later');
    const future = await h.admin('GET', '/admin/v1/audit?since=2999-01-01T00:00:00%2B03:00');
    t.same(future.body.data.items, [], 'since the future: nothing');

    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: Awaited<ReturnType<typeof h.admin>> = await h.admin('GET', `/admin/v1/audit?limit=3${cursor === null ? '' : `&cursor=${cursor}`}`);
      t.equal(res.status, 200, res.text);
      t.ok(res.body.data.items.length <= 3);
      seen.push(...res.body.data.items.map((r: { id: number }) => r.id));
      cursor = res.body.data.nextCursor;
      pages++;
    } while (cursor !== null && pages < 50);
    t.same(seen, [...all].reverse().map((r) => r.id), 'pages of 3 hold every record once, newest first');
    t.equal(pages, Math.ceil(all.length / 3));

    const keyPage = await h.admin('GET', `/admin/v1/audit?licenseKey=${key}&limit=2`);
    const rest = await h.admin('GET', `/admin/v1/audit?licenseKey=${key}&limit=500&cursor=${keyPage.body.data.nextCursor}`);
    t.same([...keyPage.body.data.items, ...rest.body.data.items].map((r: { id: number }) => r.id), ofKey, 'a filter and a cursor together');
  });
});
