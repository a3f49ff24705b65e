import t from 'tap';
import { startHarness, type Answer } from '../helpers/harness.js';
import { expectCodedError } from '../helpers/auth.js';

// get-token and passwords: the password and its hash never leave the service, credentials are
// checked before anything about the license is revealed, and a password change is in force
// for the very next get-token.

const DAY = 86_400_000;

t.test('get-token security', async (t) => {
  const h = await startHarness(t, 'gettokensec', { RATE_GET_TOKEN_PER_MIN: '0' });

  t.test('the password and its hash never appear in any response', async (t) => {
    const password = 'Gizli-Parola-7f3a9c';
    const newPassword = 'Yeni-Parola-19be44';
    const answers: [string, Answer][] = [];
    const created = await h.admin('POST', '/admin/v1/licenses', {
      organizationName: 'Sızıntı Testi A.Ş.', password, totalQuota: 3,
      expiryDate: new Date(Date.now() + DAY).toISOString(),
    });
    t.equal(created.status, 201);
    answers.push(['admin create', created]);
    const key = created.body.data.licenseKey as string;

    const [row] = await h.sql`select password_hash from licenses where license_key = ${key}`;
    const hash = row?.password_hash as string;
    t.type(hash, 'string');
    t.not(hash, password, 'stored hashed, not in plain text');
    t.notOk(hash.includes(password), 'the stored hash does not contain the password');

    answers.push(['admin get', await h.admin('GET', `/admin/v1/licenses/${key}`)]);
    const got = await h.getToken(key, password, 0);
    t.equal(got.status, 200);
    answers.push(['get-token', got]);
    answers.push(['get-token wrong password', await h.getToken(key, password + '!', 0)]);
    answers.push(['sign-token', await h.signToken(got.body.accessToken, 1)]);
    answers.push(['validate', await h.validate(got.body.signToken)]);
    answers.push(['check-quota', await h.checkQuota(key)]);
    await h.drainWorker();
    answers.push(['history', await h.history(key, got.body.accessToken)]);
    answers.push(['admin quota', await h.admin('POST', `/admin/v1/licenses/${key}/quota`, { add: 2 })]);
    answers.push(['admin patch name', await h.admin('PATCH', `/admin/v1/licenses/${key}`, { organizationName: 'Yeni Ad' })]);
    const patched = await h.admin('PATCH', `/admin/v1/licenses/${key}`, { password: newPassword });
    t.equal(patched.status, 200);
    answers.push(['admin patch password', patched]);
    const [row2] = await h.sql`select password_hash from licenses where license_key = ${key}`;
    const newHash = row2?.password_hash as string;
    t.not(newHash, hash, 'a new hash after a password change');
    answers.push(['get-token new password', await h.getToken(key, newPassword, 0)]);

    for (const [name, res] of answers) {
      t.ok(res.status < 500, `${name}: answered (${res.status})`);
      for (const secret of [password, newPassword, hash, newHash]) {
        t.notOk(res.text.includes(secret), `${name}: no password or hash in the body`);
      }
      t.notOk(/argon|\$2[aby]\$|password/i.test(res.text), `${name}: no hash-like text or password field`);
      for (const [header, value] of res.headers) {
        t.notOk([password, newPassword, hash, newHash].some((s) => value.includes(s)), `${name}: header ${header} clean`);
      }
    }
  });

  t.test('a wrong password says INVALID_CREDENTIALS whatever the license state', async (t) => {
    const inactive = await h.createLicense({ isActive: false });
    const expired = await h.createLicense({ expiryDate: new Date(Date.now() - DAY).toISOString() });
    const empty = await h.createLicense({ totalQuota: 0 });
    const both = await h.createLicense({ isActive: false, totalQuota: 0, expiryDate: new Date(Date.now() - DAY).toISOString() });
    for (const [name, lic] of [['inactive', inactive], ['expired', expired], ['no quota', empty], ['all three', both]] as const) {
      const wrong = await h.getToken(lic.licenseKey, 'not-the-password', 0);
      expectCodedError(t, wrong, 401, 'INVALID_CREDENTIALS');
      t.notMatch(wrong.text, /EXPIRED|INACTIVE|QUOTA/, `${name}: the license state is not revealed`);
    }
    // with the right password the state is told
    expectCodedError(t, await h.getToken(inactive.licenseKey, inactive.password, 0), 401, 'LICENSE_INACTIVE');
    expectCodedError(t, await h.getToken(expired.licenseKey, expired.password, 0), 401, 'LICENSE_EXPIRED');
    expectCodedError(t, await h.getToken(empty.licenseKey, empty.password, 0), 400, 'INSUFFICIENT_QUOTA');
  });

  t.test('a password changed through the admin API is in force for the next get-token', async (t) => {
    const lic = await h.createLicense({ password: 'eski-parola' });
    t.equal((await h.getToken(lic.licenseKey, 'eski-parola', 0)).status, 200);
    const patched = await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { password: 'yeni-parola' });
    t.equal(patched.status, 200);
    expectCodedError(t, await h.getToken(lic.licenseKey, 'eski-parola', 0), 401, 'INVALID_CREDENTIALS');
    const fresh = await h.getToken(lic.licenseKey, 'yeni-parola', 1);
    t.equal(fresh.status, 200);
    t.equal(fresh.body.success, true);
    // and back again
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { password: 'eski-parola' })).status, 200);
    expectCodedError(t, await h.getToken(lic.licenseKey, 'yeni-parola', 0), 401, 'INVALID_CREDENTIALS');
    t.equal((await h.getToken(lic.licenseKey, 'eski-parola', 0)).status, 200);
  });

  t.test('a password change holds when the Redis copy is lost', async (t) => {
    const lic = await h.createLicense({ password: 'ilk-parola' });
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { password: 'ikinci-parola' })).status, 200);
    await h.drainWorker();
    await h.flushRedis();
    expectCodedError(t, await h.getToken(lic.licenseKey, 'ilk-parola', 0), 401, 'INVALID_CREDENTIALS');
    t.equal((await h.getToken(lic.licenseKey, 'ikinci-parola', 0)).status, 200);
  });

  t.test('an unknown key, a wrong password and an empty-looking key all answer the same', async (t) => {
    const lic = await h.createLicense();
    const bodies = new Set<string>();
    for (const [key, pw] of [
      [lic.licenseKey, 'wrong'],
      ['00000000-0000-0000-0000-000000000000', lic.password],
      ['*', lic.password],
      ["' or 1=1 --", lic.password],
    ] as const) {
      const res = await h.getToken(key, pw, 0);
      expectCodedError(t, res, 401, 'INVALID_CREDENTIALS');
      bodies.add(res.text);
    }
    t.equal(bodies.size, 1, 'one body for all of them');
  });
});
