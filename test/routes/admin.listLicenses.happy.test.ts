import t from 'tap';
import { expectLicenseView, LICENSE_FIELDS } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';
import { getTokenPair } from '../helpers/tokens.js';

// GET /admin/v1/licenses?limit=&cursor=: every license, oldest first, in keyset pages; each
// item the License view of the other admin routes (live used count, never the password).

interface Page {
  items: Record<string, unknown>[];
  nextCursor: string | null;
}

t.test('list licenses', async (t) => {
  const h = await startHarness(t, 'adminlist');
  const created: string[] = [];
  for (let i = 0; i < 7; i++) created.push((await h.createLicense({ organizationName: `Firma ${i}`, totalQuota: 10 + i })).licenseKey);

  t.test('default page: every license, oldest first, as License views; no next page', async (t) => {
    const res = await h.admin('GET', '/admin/v1/licenses');
    expectLicenseView(t, { ...res, body: { success: res.body.success, data: res.body.data.items[0] } }, 200, 'correct horse battery staple');
    t.same(Object.keys(res.body).sort(), ['data', 'success']);
    t.same(Object.keys(res.body.data).sort(), ['items', 'nextCursor']);
    const page = res.body.data as Page;
    t.same(page.items.map((l) => l.licenseKey), created, 'creation order');
    t.same(page.items.map((l) => l.organizationName), created.map((_, i) => `Firma ${i}`));
    for (const item of page.items) t.same(Object.keys(item).sort(), LICENSE_FIELDS);
    t.equal(page.nextCursor, null);
    t.notMatch(res.text, /correct horse|argon2|password/i, 'no password, no hash');
    t.equal(res.headers.get('cache-control'), 'no-store');
  });

  t.test('limit 3: pages of 3, 3, 1 holding every license once, in order', async (t) => {
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? '?limit=3' : `?limit=3&cursor=${cursor}`;
      const res = await h.admin('GET', `/admin/v1/licenses${query}`);
      t.equal(res.status, 200, res.text);
      const page = res.body.data as Page;
      sizes.push(page.items.length);
      seen.push(...page.items.map((l) => l.licenseKey as string));
      cursor = page.nextCursor;
      if (cursor !== null) t.match(cursor, /^[A-Za-z0-9_-]+$/, 'cursor usable in a URL as it is');
    } while (cursor !== null && sizes.length < 10);
    t.same(sizes, [3, 3, 1]);
    t.same(seen, created);
    const exact = await h.admin('GET', '/admin/v1/licenses?limit=7');
    t.equal(exact.body.data.items.length, 7);
    t.equal(exact.body.data.nextCursor, null, 'no next page when the page holds the last license');
  });

  t.test('a license created after a page was read shows on the last page', async (t) => {
    const first = await h.admin('GET', '/admin/v1/licenses?limit=6');
    const late = await h.createLicense({ organizationName: 'Geç Gelen' });
    const rest = await h.admin('GET', `/admin/v1/licenses?cursor=${first.body.data.nextCursor}`);
    t.same((rest.body.data as Page).items.map((l) => l.licenseKey), [created[6], late.licenseKey]);
    created.push(late.licenseKey);
  });

  t.test('items show the live used quota and changes', async (t) => {
    const key = created[2] as string;
    const { signToken } = await getTokenPair(h, { licenseKey: key, password: 'correct horse battery staple' });
    t.equal((await h.validate(signToken)).status, 200);
    await h.admin('PATCH', `/admin/v1/licenses/${key}`, { isActive: false, domains: ['ornek.com.tr'] });
    const res = await h.admin('GET', '/admin/v1/licenses?limit=500');
    const item = (res.body.data as Page).items.find((l) => l.licenseKey === key);
    const single = await h.admin('GET', `/admin/v1/licenses/${key}`);
    t.same(item, single.body.data, 'the same view as GET /admin/v1/licenses/{key}');
    t.match(item, { usedQuota: 1, remainingQuota: 11, totalQuota: 12, isActive: false, domains: ['ornek.com.tr'] });
  });
});
