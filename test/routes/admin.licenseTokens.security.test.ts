import t from 'tap';
import { expectAdminAuthRefused } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';
import { getTokenPair } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// GET /admin/v1/licenses/{licenseKey}/tokens is for the admin bearer only (a license's own
// access token is no admin), and shows only that license's tokens.

// one service for the file: each test on licenses of its own
const h = await startHarness(t, 'admintokenssec');

t.test('401 UNAUTHORIZED without or with a wrong bearer, a license\'s access token included', async (t) => {
  const lic = await h.createLicense();
  const { accessToken } = await getTokenPair(h, lic);
  await expectAdminAuthRefused(t, h, 'GET', `/admin/v1/licenses/${lic.licenseKey}/tokens`);
  const own = await h.request('GET', `/admin/v1/licenses/${lic.licenseKey}/tokens`, undefined, { authorization: `Bearer ${accessToken}` });
  t.equal(own.status, 401);
  t.equal(own.body?.error?.code, 'UNAUTHORIZED');
});

t.test('another license\'s cursor shows nothing of the other license', async (t) => {
  const a = await h.createLicense();
  const b = await h.createLicense();
  await getTokenPair(h, a);
  await getTokenPair(h, a);
  await getTokenPair(h, b);
  const listA = await pollUntil(() => h.admin('GET', `/admin/v1/licenses/${a.licenseKey}/tokens?limit=1`), (r) => r.body?.data?.nextCursor !== null);
  const bWithACursor = await h.admin('GET', `/admin/v1/licenses/${b.licenseKey}/tokens?cursor=${listA.body.data.nextCursor}`);
  t.equal(bWithACursor.status, 200);
  const bAll = await pollUntil(() => h.admin('GET', `/admin/v1/licenses/${b.licenseKey}/tokens`), (r) => r.body?.data?.items?.length === 1);
  const aIds = new Set((await h.admin('GET', `/admin/v1/licenses/${a.licenseKey}/tokens`)).body.data.items.map((i: { tokenId: string }) => i.tokenId));
  for (const item of [...bWithACursor.body.data.items, ...bAll.body.data.items]) t.notOk(aIds.has(item.tokenId), 'never a token of license a');
});
