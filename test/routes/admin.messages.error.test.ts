import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { createBody } from '../helpers/admin.js';
import { FUZZ_SEED } from '../helpers/fuzz.js';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';
import type { Asserts } from '../helpers/shapes.js';

// Every admin 400 says, in one form and in Turkish like every admin message, the field's
// path, what was wrong and what is expected:
//   <path>: <what was wrong>; beklenen: <what is expected>
// For each field of create, PATCH and add-quota a wrong value's exact message; then any body
// made invalid at random (fixed seed, FUZZ_SEED) answers 400 in that form, never 5xx.

const FORM = /^(?<path>.+?): (?<wrong>.+); beklenen: (?<expected>.+)$/s;

const TEXT = (min: number, max: number) => `${min}-${max} karakterlik, kontrol karakteri içermeyen bir metin`;
const EXPECTED = {
  organizationName: TEXT(1, 200),
  password: TEXT(1, 1024),
  totalQuota: '0 ile 1000000000000 arasında bir tam sayı',
  expiryDate: 'RFC 3339 biçiminde bir tarih-saat (ör. 2027-12-31T23:59:59Z), en çok 40 karakter',
  isActive: 'true ya da false',
  domains: `en çok 100 öğelik bir dizi, her öğesi ${TEXT(1, 253)}`,
  domain: TEXT(1, 253),
  hostName: 'bir alan adı (ör. ornek.com.tr ya da alt alan adları için *.ornek.com.tr)',
  licenseKey: 'bir UUID (ör. 6f1c2a3e-8b7d-4c5e-9f00-1a2b3c4d5e6f)',
  webhookUrl: 'kullanıcı adı, şifre ve boşluk içermeyen mutlak bir https:// adresi, en çok 2048 karakter ya da null',
  webhookSecret: TEXT(16, 256),
  add: '1 ile 1000000000000 arasında bir tam sayı',
};
const CREATE_FIELDS = 'organizationName, password, totalQuota, expiryDate, isActive, domains, licenseKey, webhookUrl, webhookSecret, releasesPerDay, rateLimits';
const PATCH_FIELDS = 'organizationName, password, expiryDate, isActive, domains, webhookUrl, webhookSecret, releasesPerDay, rateLimits';

const without = (field: string): Record<string, unknown> => {
  const body = createBody();
  delete body[field];
  return body;
};

/** Asserts a 400 INVALID_REQUEST with exactly this message, in the one form. */
function expectMessage(t: Asserts, res: { status: number; body: any; text: string }, message: string): void { // eslint-disable-line @typescript-eslint/no-explicit-any
  t.equal(res.status, 400, `400: ${res.text}`);
  t.same(Object.keys(res.body ?? {}).sort(), ['error', 'success']);
  t.equal(res.body?.error?.code, 'INVALID_REQUEST');
  t.equal(res.body?.error?.message, message);
  t.match(res.body?.error?.message, FORM, 'the one form');
}

t.test('admin refusals name the field, what was wrong and what is expected', async (t) => {
  const h = await startHarness(t, 'adminmessages');
  const lic = await h.createLicense();
  const licensePath = `/admin/v1/licenses/${lic.licenseKey}`;

  t.test('create: each field', async (t) => {
    const cases: [Record<string, unknown>, string][] = [
      [without('organizationName'), `organizationName: eksik; beklenen: ${EXPECTED.organizationName}`],
      [createBody({ organizationName: 42 }), `organizationName: 42 geçerli değil; beklenen: ${EXPECTED.organizationName}`],
      [createBody({ organizationName: '' }), `organizationName: "" geçerli değil; beklenen: ${EXPECTED.organizationName}`],
      [createBody({ organizationName: 'a\u0000b' }), `organizationName: "a\\u0000b" geçerli değil; beklenen: ${EXPECTED.organizationName}`],
      [createBody({ organizationName: 'x'.repeat(201) }),
        `organizationName: "${'x'.repeat(59)}… (201 karakter) geçerli değil; beklenen: ${EXPECTED.organizationName}`],
      [without('password'), `password: eksik; beklenen: ${EXPECTED.password}`],
      [createBody({ password: 'gizli\u0007' }), `password: verilen değer (6 karakter) geçerli değil; beklenen: ${EXPECTED.password}`],
      [without('totalQuota'), `totalQuota: eksik; beklenen: ${EXPECTED.totalQuota}`],
      [createBody({ totalQuota: 'abc' }), `totalQuota: "abc" geçerli değil; beklenen: ${EXPECTED.totalQuota}`],
      [createBody({ totalQuota: -1 }), `totalQuota: -1 geçerli değil; beklenen: ${EXPECTED.totalQuota}`],
      [createBody({ totalQuota: 1.5 }), `totalQuota: 1.5 geçerli değil; beklenen: ${EXPECTED.totalQuota}`],
      [createBody({ totalQuota: 1e13 }), `totalQuota: 10000000000000 geçerli değil; beklenen: ${EXPECTED.totalQuota}`],
      [without('expiryDate'), `expiryDate: eksik; beklenen: ${EXPECTED.expiryDate}`],
      [createBody({ expiryDate: 'next year' }), `expiryDate: "next year" geçerli değil; beklenen: ${EXPECTED.expiryDate}`],
      [createBody({ expiryDate: 1893456000000 }), `expiryDate: 1893456000000 geçerli değil; beklenen: ${EXPECTED.expiryDate}`],
      [createBody({ isActive: 'yes' }), `isActive: "yes" geçerli değil; beklenen: ${EXPECTED.isActive}`],
      [createBody({ domains: 'example.com' }), `domains: "example.com" geçerli değil; beklenen: ${EXPECTED.domains}`],
      [createBody({ domains: ['ok.com', 42] }), `domains[1]: 42 geçerli değil; beklenen: ${EXPECTED.domain}`],
      [createBody({ domains: ['ok.com', 'bad domain'] }), `domains[1]: "bad domain" bir alan adı değil; beklenen: ${EXPECTED.hostName}`],
      [createBody({ licenseKey: 'ABC-2024-001' }), `licenseKey: "ABC-2024-001" geçerli değil; beklenen: ${EXPECTED.licenseKey}`],
      [createBody({ webhookUrl: 'ftp://x' }), `webhookUrl: "ftp://x" geçerli değil; beklenen: ${EXPECTED.webhookUrl}`],
      [createBody({ webhookUrl: 'https://hooks.example/imza', webhookSecret: 'short' }),
        `webhookSecret: verilen değer (5 karakter) geçerli değil; beklenen: ${EXPECTED.webhookSecret}`],
      [createBody({ webhookUrl: 'https://hooks.example/imza' }),
        'webhookSecret: eksik; beklenen: webhookUrl ile birlikte (ya da önceden) verilen 16-256 karakterlik bir metin'],
      [createBody({ quota: 10 }), `quota: bilinmeyen alan; beklenen: şu alanlardan biri: ${CREATE_FIELDS}`],
    ];
    for (const [body, message] of cases) {
      const key = randomUUID();
      expectMessage(t, await h.admin('POST', '/admin/v1/licenses', { licenseKey: key, ...body }), message);
      t.equal((await h.admin('GET', `/admin/v1/licenses/${key}`)).status, 404, 'nothing created');
    }
    const secret = await h.admin('POST', '/admin/v1/licenses', createBody({ password: 'çok-gizli\u0000' }));
    t.notMatch(secret.text, 'çok-gizli', 'a password is never repeated, only its length');
    expectMessage(t, await h.request('POST', '/admin/v1/licenses', '[1,2]', { authorization: `Bearer ${ADMIN_TOKEN}` }),
      `body: bir JSON nesnesi değil; beklenen: şu alanları olan bir JSON nesnesi: ${CREATE_FIELDS}`);
  });

  t.test('PATCH: each field', async (t) => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, `body: boş nesne; beklenen: şu alanlardan en az biri: ${PATCH_FIELDS}`],
      [{ totalQuota: 100 }, `totalQuota: bilinmeyen alan; beklenen: şu alanlardan biri: ${PATCH_FIELDS}`],
      [{ organizationName: null }, `organizationName: null geçerli değil; beklenen: ${EXPECTED.organizationName}`],
      [{ password: '' }, `password: verilen değer (0 karakter) geçerli değil; beklenen: ${EXPECTED.password}`],
      [{ expiryDate: '2030-02-30T00:00:00Z' }, `expiryDate: "2030-02-30T00:00:00Z" geçerli değil; beklenen: ${EXPECTED.expiryDate}`],
      [{ isActive: 'false' }, `isActive: "false" geçerli değil; beklenen: ${EXPECTED.isActive}`],
      [{ domains: ['https://'] }, `domains[0]: "https://" bir alan adı değil; beklenen: ${EXPECTED.hostName}`],
      [{ domains: Array(101).fill('a.com') }, `domains: ${JSON.stringify(Array(101).fill('a.com')).slice(0, 60)}… geçerli değil; beklenen: ${EXPECTED.domains}`],
      [{ webhookUrl: 'https://user:pw@hooks.example/' }, `webhookUrl: "https://user:pw@hooks.example/" geçerli değil; beklenen: ${EXPECTED.webhookUrl}`],
      [{ webhookSecret: 5 }, `webhookSecret: 5 geçerli değil; beklenen: ${EXPECTED.webhookSecret}`],
    ];
    for (const [body, message] of cases) expectMessage(t, await h.admin('PATCH', licensePath, body), message);
    const unchanged = (await h.admin('GET', licensePath)).body.data;
    t.equal(unchanged.isActive, true, 'nothing changed');
    t.same(unchanged.domains, []);
  });

  t.test('add-quota: add and the Idempotency-Key header', async (t) => {
    const path = `${licensePath}/quota`;
    expectMessage(t, await h.admin('POST', path, {}), `add: eksik; beklenen: ${EXPECTED.add}`);
    expectMessage(t, await h.admin('POST', path, { add: 0 }), `add: 0 geçerli değil; beklenen: ${EXPECTED.add}`);
    expectMessage(t, await h.admin('POST', path, { add: '5' }), `add: "5" geçerli değil; beklenen: ${EXPECTED.add}`);
    expectMessage(t, await h.admin('POST', path, { add: 1, memo: 'x' }), 'memo: bilinmeyen alan; beklenen: şu alanlardan biri: add, expiresAt, note');
    const badKey = await h.request('POST', path, { add: 1 }, { authorization: `Bearer ${ADMIN_TOKEN}`, 'idempotency-key': 'k'.repeat(256) });
    expectMessage(t, badKey, `Idempotency-Key: "${'k'.repeat(59)}… (256 karakter) geçerli değil; `
      + 'beklenen: 1-255 yazdırılabilir ASCII karakter, başında ve sonunda boşluk olmadan');
    t.equal((await h.admin('GET', licensePath)).body.data.totalQuota, 10, 'nothing credited');
  });

  t.test('the lists: limit, cursor, status', async (t) => {
    expectMessage(t, await h.admin('GET', '/admin/v1/licenses?limit=501'), 'limit: "501" geçerli değil; beklenen: 1 ile 500 arasında bir tam sayı');
    expectMessage(t, await h.admin('GET', '/admin/v1/licenses?cursor=zzz'), 'cursor: "zzz" geçerli değil; beklenen: önceki sayfanın nextCursor değeri');
    expectMessage(t, await h.admin('GET', `${licensePath}/tokens?status=unused`),
      'status: "unused" geçerli değil; beklenen: "issued", "used" ya da "expired"');
  });

  t.test('any body made invalid at random: 400 in the one form naming the field, never 5xx', async (t) => {
    await fc.assert(fc.asyncProperty(invalidCreate(), async ({ body, field }) => {
      const res = await h.admin('POST', '/admin/v1/licenses', body);
      if (res.status === 201) return true; // the value drawn happens to be valid for the field
      const match = FORM.exec(String(res.body?.error?.message));
      return res.status === 400 && res.body?.error?.code === 'INVALID_REQUEST' && match !== null
        && (match.groups?.path as string).startsWith(field);
    }), { seed: FUZZ_SEED, numRuns: 60 });
    t.pass(`60 random invalid bodies (seed ${FUZZ_SEED})`);
  });
});

/** A valid create body with one field replaced by a hostile value, removed, or an unknown field added; and the field. */
function invalidCreate(): fc.Arbitrary<{ body: Record<string, unknown>; field: string }> {
  const fields = ['organizationName', 'password', 'totalQuota', 'expiryDate', 'isActive', 'domains', 'licenseKey', 'webhookSecret'];
  const hostile = fc.oneof(
    fc.anything({ maxDepth: 2 }),
    fc.string({ unit: 'binary', maxLength: 300 }),
    fc.integer(), fc.double(), fc.constant(null),
    fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant('\u0000')), { maxLength: 120 }),
  );
  return fc.oneof(
    fc.record({ field: fc.constantFrom(...fields), value: hostile }).map(({ field, value }) => ({
      body: { ...createBody({ licenseKey: randomUUID() }), [field]: value }, field,
    })),
    fc.constantFrom('organizationName', 'password', 'totalQuota', 'expiryDate').map((field) => {
      const body = createBody({ licenseKey: randomUUID() });
      delete body[field];
      return { body, field };
    }),
    fc.string({ minLength: 1, maxLength: 20 }).filter((name) => !fields.includes(name) && !['webhookUrl', '__proto__'].includes(name))
      .map((name) => ({ body: { ...createBody({ licenseKey: randomUUID() }), [name]: 1 }, field: /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/.test(name) ? name : '"' })),
  );
}
