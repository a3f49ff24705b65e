import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/config/vars.js';
import { WORKER_SCRIPT, exitOf, spawnLogged } from '../helpers/processes.js';
import { testEnv } from '../helpers/harness.js';
import { backoffMs } from '../../src/webhooks/worker.js';

// The WEBHOOK_* settings (docs/operations.md#configuration): defaults, and a bad value refused at start
// with one line naming the variable, by the server and the standalone worker alike.

t.test('defaults', async (t) => {
  t.same(loadConfig(testEnv('whcfg')).webhooks, {
    quotaLowPercent: 10, expiringDays: 7, scanIntervalMs: 60_000, pollMs: 1000, timeoutMs: 5000, maxAttempts: 10,
    backoffMs: 10_000, backoffMaxMs: 3_600_000, concurrency: 4, allowHttp: false, allowPrivateNetworks: false,
  });
  t.equal(loadConfig(testEnv('whcfg', { WEBHOOK_QUOTA_LOW_PERCENT: '0' })).webhooks.quotaLowPercent, 0, '0 turns quota.low off');
  t.match(loadConfig(testEnv('whcfg', { WEBHOOK_ALLOW_HTTP: '1', WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1' })).webhooks,
    { allowHttp: true, allowPrivateNetworks: true }, 'http:// and internal targets only when set to 1');
  t.match(loadConfig(testEnv('whcfg', { WEBHOOK_ALLOW_HTTP: '0', WEBHOOK_ALLOW_PRIVATE_NETWORKS: '' })).webhooks,
    { allowHttp: false, allowPrivateNetworks: false }, '0 or empty: off');
});

t.test('bad values: one clear message naming the variable', async (t) => {
  const bad: [string, string, RegExp][] = [
    ['WEBHOOK_QUOTA_LOW_PERCENT', '100', /WEBHOOK_QUOTA_LOW_PERCENT must be between 0 and 99, got 100/],
    ['WEBHOOK_QUOTA_LOW_PERCENT', '10%', /WEBHOOK_QUOTA_LOW_PERCENT must be a whole number, got "10%"/],
    ['WEBHOOK_QUOTA_LOW_PERCENT', '-5', /WEBHOOK_QUOTA_LOW_PERCENT must be a whole number/],
    ['WEBHOOK_EXPIRING_DAYS', '0', /WEBHOOK_EXPIRING_DAYS must be between 1 and 365/],
    ['WEBHOOK_TIMEOUT_MS', '5s', /WEBHOOK_TIMEOUT_MS must be a whole number/],
    ['WEBHOOK_MAX_ATTEMPTS', '0', /WEBHOOK_MAX_ATTEMPTS must be between 1 and 100/],
    ['WEBHOOK_CONCURRENCY', '1000', /WEBHOOK_CONCURRENCY must be between 1 and 64/],
    ['WEBHOOK_BACKOFF_MAX_MS', '5', /WEBHOOK_BACKOFF_MAX_MS \(5\) must not be below WEBHOOK_BACKOFF_MS \(10000\)/],
    ['WEBHOOK_ALLOW_HTTP', 'yes', /WEBHOOK_ALLOW_HTTP must be 1 \(http:\/\/ webhook URLs allowed\) or 0 \(https:\/\/ only\), got "yes"/],
    ['WEBHOOK_ALLOW_HTTP', 'true', /WEBHOOK_ALLOW_HTTP must be 1 .* or 0 .*, got "true"/],
    ['WEBHOOK_ALLOW_PRIVATE_NETWORKS', ' 1', /WEBHOOK_ALLOW_PRIVATE_NETWORKS must be 1 \(webhooks may reach internal addresses\) or 0 \(public addresses only\), got " 1"/],
  ];
  for (const [name, value, message] of bad) {
    t.throws(() => loadConfig(testEnv('whcfg', { [name]: value })), { constructor: ConfigError, message }, `${name}=${value}`);
  }
  const worker = spawnLogged(t, WORKER_SCRIPT, { ...testEnv('whcfg'), WEBHOOK_QUOTA_LOW_PERCENT: 'ten' });
  const exit = await exitOf(worker.child, 20_000);
  t.equal(exit.code, 1, 'the standalone worker refuses to start');
  t.match(worker.text('stderr'), /refusing to start: WEBHOOK_QUOTA_LOW_PERCENT must be a whole number, got "ten"/);
});

t.test('backoff: doubling from WEBHOOK_BACKOFF_MS, capped, the upper half at random', async (t) => {
  const config = { backoffMs: 100, backoffMaxMs: 1000 };
  for (const [attempt, full] of [[1, 100], [2, 200], [3, 400], [4, 800], [5, 1000], [60, 1000]] as const) {
    for (let i = 0; i < 50; i++) {
      const wait = backoffMs(config, attempt);
      if (wait < full / 2 || wait > full) t.fail(`attempt ${attempt}: ${wait} ms is outside ${full / 2}..${full}`);
    }
  }
  const spread = new Set(Array.from({ length: 50 }, () => backoffMs(config, 4)));
  t.ok(spread.size > 10, 'jittered: waits differ');
});
