import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { redisAuth, redisConfigCheck, redisSentinel, redisWait, type RedisConfigCheck, type RedisSentinel } from './config/redis.js';
import { adminTokens, BEARER_SECRET, jwtKeys, type AdminToken, type JwtKey } from './config/secrets.js';
import { ConfigError, flagVar, intVar, ownSecret, parseNodes, urlWithOwnPassword, type Env } from './config/vars.js';
import { webhookConfig, type WebhookConfig } from './config/webhooks.js';
import { parseCorsOrigins } from './http/cors.js';
import { signingKeysOf, type SigningKey } from './tokens/signingKeys.js';

// Configuration comes from the environment only, validated once at start so that a
// misconfigured deployment refuses to start with one clear line instead of failing later.
// This file holds the Config every module reads and loadConfig, which fills it in: one
// concern, the whole of the settings and the checks of single settings too small to be a
// group; the groups (Redis, secrets, webhooks) and the readers of one variable are in
// src/config/.

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

/** The RATE_*_PER_MIN limits count requests per fixed window of this length. */
export const RATE_WINDOW_MS = 60_000;

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
  if (metricsToken !== null && !BEARER_SECRET.test(metricsToken)) {
    throw new ConfigError('METRICS_TOKEN must be 16 to 4096 printable ASCII characters without spaces');
  }
  if (metricsToken !== null) ownSecret('METRICS_TOKEN', metricsToken, 'openssl rand -base64 33');
  const admins = adminTokens(env);
  return {
    port: intVar(env, 'PORT', 8080, 0, 65535),
    workers: intVar(env, 'WORKERS', availableParallelism(), 1, 1024),
    host: env.HOST || '127.0.0.1',
    redisUrl: urlWithOwnPassword('REDIS_URL', redisUrlOf(env)),
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
    logLevel: logLevelOf(env),
    // unset: on, as it always was
    runWorker: env.RUN_WORKER === undefined || env.RUN_WORKER === '' || flagVar(env, 'RUN_WORKER', 'run the usage worker here', 'serve only'),
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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** LOG_LEVEL, one of pino's (an unknown one would stop the logger's creation with a stack trace). */
function logLevelOf(env: Env): string {
  const level = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(level)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  return level;
}

/** REDIS_URL: a redis:// or rediss:// URL, or a Unix socket's path (ioredis reads any other text as one, and waits for it in vain). */
function redisUrlOf(env: Env): string {
  const url = env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (url.startsWith('/')) return url;
  const scheme = URL.canParse(url) ? new URL(url).protocol : '';
  if (scheme !== 'redis:' && scheme !== 'rediss:') {
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL (redis://host:6379) or a Unix socket\'s path');
  }
  return url;
}
