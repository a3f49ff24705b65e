import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseCorsOrigins } from './http/cors.js';
import { placeholderIn, urlPassword } from './placeholders.js';
import { signingKeysOf, type SigningKey } from './tokens/signingKeys.js';

// Configuration comes from the environment only, validated once at start so that a
// misconfigured deployment refuses to start with one clear line instead of failing later.

export interface Config {
  port: number;
  host: string;
  /** WORKERS: server processes sharing the port (src/cli/primary.ts); 1: this process serves alone */
  workers: number;
  redisUrl: string;
  redisClusterNodes: { host: string; port: number }[];
  /** REDIS_SENTINELS and the settings beside it: Redis found through Sentinel (null: not used) */
  redisSentinel: RedisSentinel | null;
  /** REDIS_PASSWORD (and REDIS_USERNAME): of the Redis servers found through Sentinel or Cluster; REDIS_URL carries its own */
  redisAuth: { username?: string; password?: string };
  redisPrefix: string;
  /** a Redis call slower than this fails (503), never hangs */
  redisCommandTimeoutMs: number;
  /** REDIS_WAIT_REPLICAS, REDIS_WAIT_TIMEOUT_MS: replicas that must hold a redemption before it is answered (src/redis/replicaWait.ts; 0: none) */
  redisWait: { replicas: number; timeoutMs: number };
  /** REDIS_CONFIG_CHECK: what the start-up check of Redis's configuration does (src/redis/configCheck.ts) */
  redisConfigCheck: RedisConfigCheck;
  /** NODE_ENV=production: warn when Redis runs without persistence (appendonly no) */
  production: boolean;
  databaseUrl: string;
  pgSchema: string;
  /** the HMAC keys of the tokens: the first signs, every one verifies (JWT_SECRETS, or JWT_SECRET alone) */
  jwtKeys: JwtKey[];
  /** iss of every token, checked on verify */
  jwtIssuer: string;
  /** the Ed25519 keys of license tokens and receipts: the first signs, all are published (SIGNING_KEYS_FILE or SIGNING_KEYS); [] unset (license validation and sign answer 503) and in the worker */
  signingKeys: SigningKey[];
  /** LICENSE_TOKEN_SECONDS: how long a license token lives */
  licenseTokenSeconds: number;
  /** CORS_ORIGINS; null: no CORS */
  corsOrigins: Exclude<ReturnType<typeof parseCorsOrigins>, string> | null;
  /** ADMIN_TOKENS (name:token,...) or ADMIN_TOKEN alone (named "admin"); none: the admin API is not served */
  adminTokens: AdminToken[];
  tls: { certFile: string; keyFile: string } | null;
  /**
   * per minute, 0 = off. getToken: tokens get-token issues per license key (correct credentials only);
   * getTokenFailures: failed get-tokens per client address; getTokenKeyFailures: failed get-tokens per license
   * key from addresses not trusted there, and per key and address for a trusted one (src/licenses/loginLimits.ts);
   * history: history and ledger requests per license, together, counted before Postgres is read (src/routes/holderReads.ts)
   */
  rate: {
    getToken: number; getTokenFailures: number; getTokenKeyFailures: number; signToken: number; validate: number; checkQuota: number;
    history: number;
  };
  /** get-token's failure budgets: how long an address stays trusted at a key it logged in to (0: never), the longest an attempt is held before it is refused */
  logins: { trustMs: number; maxDelayMs: number };
  /** X-Forwarded-For hops to trust for the client address */
  trustProxy: number;
  /** how long Redis remembers that a license key does not exist (every instance) */
  unknownKeySeconds: number;
  /** password hashes waiting for the hasher beyond which get-token sheds load with 503 */
  passwordQueue: number;
  quotaCacheSeconds: number;
  logLevel: string;
  runWorker: boolean;
  bodyLimitBytes: number;
  adminBodyLimitBytes: number;
  shutdownTimeoutMs: number;
  worker: { batchSize: number; blockMs: number; claimIdleMs: number; lingerMs: number; lingerEvents: number };
  webhooks: WebhookConfig;
  /** METRICS: record and serve GET /metrics (false: nothing is recorded, /metrics is 404) */
  metrics: boolean;
  /** METRICS_TOKEN: the bearer token /metrics asks for; null: open (on the bound interface) */
  metricsToken: string | null;
  /** METRICS_PORT: where the standalone worker (npm run worker) serves GET /metrics; null: nowhere */
  metricsPort: number | null;
  /** RETENTION_DAYS: the usage worker drops days of token_issues and token_redemptions older than this; null: all are kept */
  retentionDays: number | null;
  /** RELEASE_WINDOW_SECONDS: how long after its redemption a token's unit may be given back (POST /api/license/release), ms */
  releaseWindowMs: number;
}

/**
 * refuse: an evicting maxmemory-policy refuses the start, an unreadable configuration is
 * a warning; strict: both refuse; warn: both are warnings; off: no check.
 */
export const REDIS_CONFIG_CHECKS = ['refuse', 'strict', 'warn', 'off'] as const;
export type RedisConfigCheck = (typeof REDIS_CONFIG_CHECKS)[number];

function redisConfigCheck(env: Env): RedisConfigCheck {
  const raw = env.REDIS_CONFIG_CHECK || 'refuse';
  const mode = REDIS_CONFIG_CHECKS.find((m) => m === raw);
  if (!mode) throw new ConfigError(`REDIS_CONFIG_CHECK must be one of ${REDIS_CONFIG_CHECKS.join(', ')}, got "${raw}"`);
  return mode;
}

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

function webhookConfig(env: Env): WebhookConfig {
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

export interface JwtKey {
  /** the kid of the tokens it signs */
  kid: string;
  secret: string;
}

/** The kid of JWT_SECRET when it is the only key (JWT_SECRETS=default:<secret> is the same). */
export const DEFAULT_KID = 'default';
const KID = /^[A-Za-z0-9._-]{1,64}$/;
const SECRET_HINT = 'at least 32 bytes (e.g. `openssl rand -hex 32`)';

/** Refuses a secret-bearing setting whose value is a placeholder (src/placeholders.ts), naming the setting and not the value. */
function ownSecret(what: string, value: string, make = 'openssl rand -base64 48'): string {
  const reason = placeholderIn(value);
  if (reason !== null) throw new ConfigError(`${what} is not a secret: ${reason}. Set one of your own (\`${make}\`)`);
  return value;
}

/** JWT_SECRETS (kid:secret,...) or JWT_SECRET, validated. */
function jwtKeys(env: Env): JwtKey[] {
  const single = env.JWT_SECRET ?? '';
  const list = env.JWT_SECRETS ?? '';
  if (single !== '' && list !== '') throw new ConfigError('set JWT_SECRETS or JWT_SECRET, not both (JWT_SECRET=s is JWT_SECRETS=default:s)');
  if (list === '') {
    if (Buffer.byteLength(single) < 32) throw new ConfigError(`JWT_SECRET (or JWT_SECRETS) is required and must be ${SECRET_HINT}`);
    return [{ kid: DEFAULT_KID, secret: ownSecret('JWT_SECRET', single) }];
  }
  const keys: JwtKey[] = [];
  for (const entry of list.split(',')) {
    const colon = entry.indexOf(':');
    const kid = colon < 0 ? '' : entry.slice(0, colon).trim();
    const secret = colon < 0 ? '' : entry.slice(colon + 1);
    if (!KID.test(kid)) throw new ConfigError('JWT_SECRETS must be kid:secret,... with kids of letters, digits, ".", "_" and "-" (at most 64)');
    if (Buffer.byteLength(secret) < 32) throw new ConfigError(`JWT_SECRETS: the secret of "${kid}" must be ${SECRET_HINT}`);
    if (keys.some((k) => k.kid === kid)) throw new ConfigError(`JWT_SECRETS names the kid "${kid}" twice`);
    keys.push({ kid, secret: ownSecret(`JWT_SECRETS: the secret of "${kid}"`, secret) });
  }
  return keys;
}

/** An admin of the admin API: the name its changes are recorded under (src/licenses/audit.ts), and its bearer token. */
export interface AdminToken {
  name: string;
  token: string;
}

/** The name of ADMIN_TOKEN when it is the only admin token (ADMIN_TOKENS=admin:t is the same). */
export const DEFAULT_ADMIN = 'admin';
const ADMIN_NAME = /^[a-z0-9._-]{1,32}$/;
/** Visible ASCII (a bearer token has no spaces, src/routes/schemas.ts bearer), no comma (the list's separator). */
const ADMIN_TOKEN_TEXT = /^[\x21-\x2b\x2d-\x7e]{16,4096}$/;

/** ADMIN_TOKENS (name:token,...) or ADMIN_TOKEN, validated; none set: []. */
function adminTokens(env: Env): AdminToken[] {
  const single = env.ADMIN_TOKEN ?? '';
  const list = env.ADMIN_TOKENS ?? '';
  if (single !== '' && list !== '') {
    throw new ConfigError('set ADMIN_TOKENS or ADMIN_TOKEN, not both (ADMIN_TOKEN=t is ADMIN_TOKENS=admin:t)');
  }
  if (list === '') {
    if (single === '') return [];
    if (single.length < 16) throw new ConfigError('ADMIN_TOKEN must be at least 16 characters');
    return [{ name: DEFAULT_ADMIN, token: ownSecret('ADMIN_TOKEN', single, 'openssl rand -base64 33') }];
  }
  const admins: AdminToken[] = [];
  for (const entry of list.split(',')) {
    const colon = entry.indexOf(':');
    const name = colon < 0 ? '' : entry.slice(0, colon).trim();
    const token = colon < 0 ? '' : entry.slice(colon + 1).trim();
    if (!ADMIN_NAME.test(name)) {
      throw new ConfigError('ADMIN_TOKENS must be name:token,... with names of 1-32 lower-case letters, digits, ".", "_" and "-"');
    }
    if (!ADMIN_TOKEN_TEXT.test(token)) {
      throw new ConfigError(`ADMIN_TOKENS: the token of "${name}" must be 16 to 4096 printable ASCII characters without spaces or commas`);
    }
    if (admins.some((a) => a.name === name)) throw new ConfigError(`ADMIN_TOKENS names the admin "${name}" twice`);
    const twin = admins.find((a) => a.token === token);
    if (twin) throw new ConfigError(`ADMIN_TOKENS: "${name}" and "${twin.name}" have the same token (each admin needs its own)`);
    admins.push({ name, token: ownSecret(`ADMIN_TOKENS: the token of "${name}"`, token, 'openssl rand -base64 33') });
  }
  return admins;
}

/** The RATE_*_PER_MIN limits count requests per fixed window of this length. */
export const RATE_WINDOW_MS = 60_000;

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** An on/off setting: 1 or 0, unset or empty being 0 (off). */
function flagVar(env: Env, name: string, on: string, off: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === '0') return false;
  if (raw === '1') return true;
  throw new ConfigError(`${name} must be 1 (${on}) or 0 (${off}), got "${raw}"`);
}

function parseNodes(name: string, raw: string | undefined): { host: string; port: number }[] {
  if (!raw) return [];
  return raw.split(',').map((entry) => {
    const match = /^\s*(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})\s*$/.exec(entry);
    if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) throw new ConfigError(`${name} must be host:port,... got "${entry}"`);
    return { host: (match[1] as string).replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) };
  });
}

function redisWait(env: Env): { replicas: number; timeoutMs: number } {
  const commandTimeoutMs = intVar(env, 'REDIS_COMMAND_TIMEOUT_MS', 1000, 50, 60000);
  const replicas = intVar(env, 'REDIS_WAIT_REPLICAS', 0, 0, 16);
  const timeoutMs = intVar(env, 'REDIS_WAIT_TIMEOUT_MS', Math.min(250, Math.floor(commandTimeoutMs / 2)), 1, 60000);
  if (replicas > 0 && timeoutMs >= commandTimeoutMs) {
    throw new ConfigError(`REDIS_WAIT_TIMEOUT_MS (${timeoutMs}) must be below REDIS_COMMAND_TIMEOUT_MS (${commandTimeoutMs}): the call it waits on would time out first`);
  }
  return { replicas, timeoutMs };
}

export interface RedisSentinel {
  sentinels: { host: string; port: number }[];
  /** REDIS_SENTINEL_MASTER: the name the sentinels monitor the master under */
  masterName: string;
  /** REDIS_SENTINEL_USERNAME, REDIS_SENTINEL_PASSWORD: of the sentinels themselves */
  username?: string;
  password?: string;
}

/**
 * REDIS_USERNAME and the like: any text but control characters (a newline pasted with a
 * secret would only fail AUTH later, with a message that does not say why), at most 4096
 * bytes. Never echoed in the message. Unset or empty: undefined.
 */
function redisCredential(env: Env, name: string): string | undefined {
  const value = env[name];
  if (!value) return undefined;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(value) || Buffer.byteLength(value) > 4096) {
    throw new ConfigError(`${name} must be at most 4096 bytes without control characters (a newline, a tab, a NUL byte): check how it was pasted`);
  }
  return name.endsWith('PASSWORD') ? ownSecret(name, value) : value;
}

/** A URL whose password, if it has one, is no placeholder. */
function urlWithOwnPassword(name: string, url: string): string {
  const password = urlPassword(url);
  if (password !== '') ownSecret(`the password in ${name}`, password);
  return url;
}

function redisAuth(env: Env): { username?: string; password?: string } {
  const username = redisCredential(env, 'REDIS_USERNAME');
  const password = redisCredential(env, 'REDIS_PASSWORD');
  return { ...(username ? { username } : {}), ...(password ? { password } : {}) };
}

function redisSentinel(env: Env): RedisSentinel | null {
  const sentinels = parseNodes('REDIS_SENTINELS', env.REDIS_SENTINELS);
  if (sentinels.length === 0) {
    for (const name of ['REDIS_SENTINEL_MASTER', 'REDIS_SENTINEL_USERNAME', 'REDIS_SENTINEL_PASSWORD']) {
      if (env[name]) throw new ConfigError(`${name} is set but REDIS_SENTINELS is not: list the sentinels (host:port,...)`);
    }
    return null;
  }
  if (env.REDIS_CLUSTER_NODES) throw new ConfigError('REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set: choose Sentinel or Cluster');
  const masterName = env.REDIS_SENTINEL_MASTER ?? '';
  if (!/^[\x21-\x7e]{1,200}$/.test(masterName)) {
    throw new ConfigError(`REDIS_SENTINEL_MASTER must name the master the sentinels monitor (as in "sentinel monitor <name> ..."), got "${masterName}"`);
  }
  const username = redisCredential(env, 'REDIS_SENTINEL_USERNAME');
  const password = redisCredential(env, 'REDIS_SENTINEL_PASSWORD');
  return { sentinels, masterName, ...(username ? { username } : {}), ...(password ? { password } : {}) };
}

/**
 * role "worker": the standalone usage worker signs nothing and serves nothing, so it needs
 * neither JWT_SECRET(S) nor TLS settings.
 */
export function loadConfig(env: Env = process.env, role: 'server' | 'worker' = 'server'): Config {
  const serving = role === 'server';
  const keys = serving ? jwtKeys(env) : [];
  const issuer = env.JWT_ISSUER || 'license-service';
  if (!/^[\x21-\x7e]{1,256}$/.test(issuer)) throw new ConfigError('JWT_ISSUER must be 1-256 printable ASCII characters without spaces');
  const cors = parseCorsOrigins(env.CORS_ORIGINS ?? '');
  if (typeof cors === 'string') throw new ConfigError(`CORS_ORIGINS: ${cors}`);
  const certFile = env.TLS_CERT_FILE ?? '';
  const keyFile = env.TLS_KEY_FILE ?? '';
  if ((certFile === '') !== (keyFile === '')) {
    throw new ConfigError('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  for (const [name, file] of [['TLS_CERT_FILE', certFile], ['TLS_KEY_FILE', keyFile]] as const) {
    if (file && !existsSync(file)) throw new ConfigError(`${name} names a file that does not exist: ${file}`);
  }
  const tls = certFile ? { certFile, keyFile } : null;
  if (serving && !tls && env.ALLOW_HTTP !== '1') {
    throw new ConfigError(
      'HTTPS is mandatory: set TLS_CERT_FILE and TLS_KEY_FILE, or ALLOW_HTTP=1 behind a TLS-terminating proxy',
    );
  }
  let signingKeys: SigningKey[] = [];
  try {
    if (serving) signingKeys = signingKeysOf(env);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const prefix = env.REDIS_PREFIX ?? 'lic';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(prefix)) {
    throw new ConfigError(`REDIS_PREFIX may hold only letters, digits, "_", "." and "-", got "${prefix}"`);
  }
  const schema = env.PG_SCHEMA ?? 'public';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new ConfigError(`PG_SCHEMA must be a lower-case SQL identifier, got "${schema}"`);
  }
  const databaseUrl = env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/licensing';
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  }
  urlWithOwnPassword('DATABASE_URL', databaseUrl);
  const metrics = env.METRICS || '1';
  if (metrics !== '0' && metrics !== '1') throw new ConfigError(`METRICS must be 1 (record and serve /metrics) or 0 (off), got "${metrics}"`);
  const metricsToken = env.METRICS_TOKEN ? env.METRICS_TOKEN : null;
  if (metricsToken !== null && !/^[\x21-\x7e]{16,4096}$/.test(metricsToken)) {
    throw new ConfigError('METRICS_TOKEN must be 16 to 4096 printable ASCII characters without spaces');
  }
  if (metricsToken !== null) ownSecret('METRICS_TOKEN', metricsToken, 'openssl rand -base64 33');
  const admins = adminTokens(env);
  return {
    port: intVar(env, 'PORT', 8080, 0, 65535),
    workers: intVar(env, 'WORKERS', availableParallelism(), 1, 1024),
    host: env.HOST || '127.0.0.1',
    redisUrl: urlWithOwnPassword('REDIS_URL', env.REDIS_URL || 'redis://127.0.0.1:6379'),
    redisClusterNodes: parseNodes('REDIS_CLUSTER_NODES', env.REDIS_CLUSTER_NODES),
    redisSentinel: redisSentinel(env),
    redisAuth: redisAuth(env),
    redisPrefix: prefix,
    redisCommandTimeoutMs: intVar(env, 'REDIS_COMMAND_TIMEOUT_MS', 1000, 50, 60000),
    redisConfigCheck: redisConfigCheck(env),
    redisWait: redisWait(env),
    production: env.NODE_ENV === 'production',
    databaseUrl,
    pgSchema: schema,
    jwtKeys: keys,
    jwtIssuer: issuer,
    signingKeys,
    licenseTokenSeconds: intVar(env, 'LICENSE_TOKEN_SECONDS', 86_400, 60, 366 * 86_400),
    corsOrigins: cors.any || cors.rules.length > 0 ? cors : null,
    adminTokens: admins,
    tls,
    rate: {
      getToken: intVar(env, 'RATE_GET_TOKEN_PER_MIN', 10, 0, 1e9),
      getTokenFailures: intVar(env, 'RATE_GET_TOKEN_FAILURES_PER_MIN', 30, 0, 1e9),
      getTokenKeyFailures: intVar(env, 'RATE_GET_TOKEN_KEY_FAILURES_PER_MIN', 10, 0, 1e9),
      signToken: intVar(env, 'RATE_SIGN_TOKEN_PER_MIN', 100, 0, 1e9),
      validate: intVar(env, 'RATE_VALIDATE_PER_MIN', 100, 0, 1e9),
      checkQuota: intVar(env, 'RATE_CHECK_QUOTA_PER_MIN', 10, 0, 1e9),
      history: intVar(env, 'RATE_HISTORY_PER_MIN', 60, 0, 1e9),
    },
    logins: {
      trustMs: intVar(env, 'GET_TOKEN_TRUST_DAYS', 30, 0, 3650) * 86_400_000,
      maxDelayMs: intVar(env, 'GET_TOKEN_MAX_DELAY_MS', 10_000, 0, 60_000),
    },
    quotaCacheSeconds: intVar(env, 'QUOTA_CACHE_SECONDS', 30, 0, 86400),
    trustProxy: intVar(env, 'TRUST_PROXY', 0, 0, 16),
    unknownKeySeconds: intVar(env, 'UNKNOWN_KEY_CACHE_SECONDS', 60, 0, 86400),
    passwordQueue: intVar(env, 'PASSWORD_QUEUE_MAX', 64, 1, 100000),
    logLevel: env.LOG_LEVEL || 'info',
    runWorker: env.RUN_WORKER !== '0',
    bodyLimitBytes: intVar(env, 'BODY_LIMIT_BYTES', 8192, 256, 1 << 20),
    adminBodyLimitBytes: 65536,
    shutdownTimeoutMs: intVar(env, 'SHUTDOWN_TIMEOUT_MS', 15000, 0, 600000),
    worker: {
      batchSize: intVar(env, 'WORKER_BATCH_SIZE', 1000, 1, 100000),
      blockMs: intVar(env, 'WORKER_BLOCK_MS', 50, 1, 10000),
      claimIdleMs: intVar(env, 'WORKER_CLAIM_IDLE_MS', 30000, 100, 3600000),
      lingerMs: intVar(env, 'WORKER_LINGER_MS', 50, 0, 10000),
      lingerEvents: intVar(env, 'WORKER_LINGER_EVENTS', 1000, 1, 1000000),
    },
    webhooks: webhookConfig(env),
    metrics: metrics === '1',
    metricsToken,
    metricsPort: env.METRICS_PORT ? intVar(env, 'METRICS_PORT', 0, 0, 65535) : null,
    retentionDays: env.RETENTION_DAYS ? intVar(env, 'RETENTION_DAYS', 0, 1, 36_500) : null,
    releaseWindowMs: intVar(env, 'RELEASE_WINDOW_SECONDS', 300, 1, 86_400) * 1000,
  };
}
