import { ConfigError, flagVar, intVar, type Env } from './vars.js';

// The settings of the webhooks the usage worker sends (src/webhooks/worker.ts), read
// together: one concern, the WEBHOOK_* variables, whose backoff bounds are checked against
// each other.

/** The webhooks the usage worker sends (docs/api.md#webhooks). */
export interface WebhookConfig {
  /** quota.low when the remaining quota falls to this percentage of the total or below; 0: no quota.low */
  quotaLowPercent: number;
  /** license.expiring this many days before the expiry date */
  expiringDays: number;
  /** how often the worker looks for licenses about to expire */
  scanIntervalMs: number;
  /** how often the delivery loop looks for due events when it has none in hand */
  pollMs: number;
  /** one delivery attempt, from connecting to the response's status */
  timeoutMs: number;
  /** attempts per event, the first included; then it is marked failed (kept, replayable) */
  maxAttempts: number;
  /** the wait after the first failed attempt, doubled after each next one, up to backoffMaxMs (with jitter) */
  backoffMs: number;
  backoffMaxMs: number;
  /** deliveries in flight at once per worker */
  concurrency: number;
  /** WEBHOOK_ALLOW_HTTP: http:// webhook URLs are accepted and sent to (tests, on-premises receivers) */
  allowHttp: boolean;
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: webhooks may reach loopback, private, link-local and metadata addresses */
  allowPrivateNetworks: boolean;
}

export function webhookConfig(env: Env): WebhookConfig {
  const backoffMs = intVar(env, 'WEBHOOK_BACKOFF_MS', 10_000, 1, 86_400_000);
  const backoffMaxMs = intVar(env, 'WEBHOOK_BACKOFF_MAX_MS', 3_600_000, 1, 86_400_000);
  if (backoffMaxMs < backoffMs) {
    throw new ConfigError(`WEBHOOK_BACKOFF_MAX_MS (${backoffMaxMs}) must not be below WEBHOOK_BACKOFF_MS (${backoffMs})`);
  }
  return {
    quotaLowPercent: intVar(env, 'WEBHOOK_QUOTA_LOW_PERCENT', 10, 0, 99),
    expiringDays: intVar(env, 'WEBHOOK_EXPIRING_DAYS', 7, 1, 365),
    scanIntervalMs: intVar(env, 'WEBHOOK_SCAN_INTERVAL_MS', 60_000, 10, 86_400_000),
    pollMs: intVar(env, 'WEBHOOK_POLL_MS', 1000, 10, 60_000),
    timeoutMs: intVar(env, 'WEBHOOK_TIMEOUT_MS', 5000, 10, 60_000),
    maxAttempts: intVar(env, 'WEBHOOK_MAX_ATTEMPTS', 10, 1, 100),
    backoffMs,
    backoffMaxMs,
    concurrency: intVar(env, 'WEBHOOK_CONCURRENCY', 4, 1, 64),
    allowHttp: flagVar(env, 'WEBHOOK_ALLOW_HTTP', 'http:// webhook URLs allowed', 'https:// only'),
    allowPrivateNetworks: flagVar(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', 'webhooks may reach internal addresses', 'public addresses only'),
  };
}
