import t from 'tap';
import { isTypeFetch } from '../../src/db/typeFetch.js';
import { LIVE_COUNTS, startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { startPostgresProxy } from '../helpers/proxy.js';
import { mintTokens } from '../helpers/tokens.js';
import { waitFor } from '../helpers/wait.js';

// A Postgres connection reset while the driver is still setting it up (its first statement,
// the array types, in flight): the driver rejects that statement where nothing listens. The
// service logs a warning for it, not an error, and the write waiting for the connection is
// retried and lands once.

t.test('a connection reset while it is being set up: a warning, no error, the redemption lands once', async (t) => {
  const { proxy, url } = await startPostgresProxy(t); // registered first: closed after the service has stopped
  const h = await startHarness(t, 'pg-typefetch-reset', { ...LIVE_COUNTS, DATABASE_URL: url }, { logLevel: 'warn' });
  const lic = await h.createLicense({ totalQuota: 5 });
  const { tokens: [token] } = await mintTokens(h, lic, 1, 0);
  const tokenId = claimsOf(token as string).token_id;
  await waitFor('the issuance is persisted', async () => {
    const [row] = await h.sql`select 1 from sign_tokens where token_id = ${tokenId}`;
    return row !== undefined;
  }, 10_000);

  // every connection dropped; the next one made is reset during its setup
  proxy.cut();
  let reset = false;
  void proxy.resetOnStatement(isTypeFetch).then(() => { reset = true; });
  t.equal((await h.validate(token as string, 'reset.example')).status, 200);
  proxy.restore();
  await waitFor('a connection is set up again, and reset', () => reset, 15_000);

  await waitFor('the redemption lands', async () => (await h.postgresUsedQuota(lic.firmaId)) === 1, 15_000);
  const lost = () => h.logs.find((l) => l.level === 40 && String(l.msg).includes('lost while it was being set up'));
  await waitFor(() => `the lost setup is logged (last: ${JSON.stringify(h.logs.slice(-3))})`, () => lost() !== undefined, 5_000);
  t.equal((lost()?.err as { code?: string } | undefined)?.code, 'ECONNRESET', 'the warning names the reset');
  t.same(h.logs.filter((l) => (l.level as number) >= 50), [], 'nothing logged as an error');
  t.equal(h.logs.find((l) => l.msg === 'child died: restarting it'), undefined, 'no process died');

  const [row] = await h.sql`select status from sign_tokens where token_id = ${tokenId}`;
  t.equal(row?.status, 'used');
  t.equal(await h.postgresUsedQuota(lic.firmaId), 1, 'counted once');
});
