import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import postgres from 'postgres';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createRedis, type RedisClient } from '../../src/redis/client.js';
import { KeySpace } from '../../src/redis/keys.js';
import type { Service } from '../../src/service.js';
import { usageLag } from '../../src/usage/lag.js';
import { DEFAULT_WORKERS } from './processes.js';
import { TEST_SIGNING_KEY } from './signingKeys.js';
import { startDeployed, type DeployedService } from './deployed.js';
import { answerOf, call, type Answer, type Client } from './http.js';
import { sleep, waitFor } from './wait.js';

// The one harness: every test file runs its own service against the real local Redis and
// Postgres, isolated by its own REDIS_PREFIX and PG_SCHEMA, and removes both when it ends
// (startHarness, or testStorage for a test that runs the service as a child process).
// startHarness runs the service as `npm start` does with its default settings: a primary
// and one server process per core on one port (./deployed.ts), reached only through that
// port, each request on a connection of its own (./http.ts), so consecutive requests of a
// test land on different processes as a user's do. startInProcessHarness runs it in the
// test's own process, for a test that needs its internals (the usage worker object, the
// logger, one process's timing); each call says why.

export const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** How long Harness.request waits for an answer. */
const REQUEST_TIMEOUT_MS = 60_000;

/** Every rate limit off (every RATE_* variable), for tests that send many requests. */
export const NO_RATE_LIMITS: Record<string, string> = {
  RATE_GET_TOKEN_PER_MIN: '0',
  RATE_GET_TOKEN_FAILURES_PER_MIN: '0',
  RATE_GET_TOKEN_KEY_FAILURES_PER_MIN: '0',
  RATE_SIGN_TOKEN_PER_MIN: '0',
  RATE_VALIDATE_PER_MIN: '0',
  RATE_CHECK_QUOTA_PER_MIN: '0',
  RATE_HISTORY_PER_MIN: '0',
};

/** No rate limits and no check-quota cache: every answer shows the live counts. */
export const LIVE_COUNTS: Record<string, string> = { ...NO_RATE_LIMITS, QUOTA_CACHE_SECONDS: '0' };

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface LicenseInput {
  organizationName?: string;
  password?: string;
  totalQuota?: number;
  expiryDate?: string;
  isActive?: boolean;
  domains?: string[];
  licenseKey?: string;
  /** the license's own limits per minute (null: the deployment's) */
  rateLimits?: Record<string, number | null>;
  /** how many of its redeemed tokens a day the license may give back (POST /api/license/release); default 0, off */
  releasesPerDay?: number;
}

export interface TestLicense {
  licenseKey: string;
  firmaId: string;
  password: string;
}

/** Creates a license through the admin API of any client; defaults: quota 10, a year ahead, active, any origin. */
export async function createLicense(client: Client, input: LicenseInput = {}): Promise<TestLicense> {
  const password = input.password ?? 'correct horse battery staple';
  const res = await client.request('POST', '/admin/v1/licenses', {
    organizationName: 'Test A.Ş.',
    totalQuota: 10,
    expiryDate: new Date(Date.now() + 365 * 86400_000).toISOString(),
    ...input,
    password,
  }, { authorization: `Bearer ${ADMIN_TOKEN}` });
  if (res.status !== 201) throw new Error(`createLicense: ${res.status} ${res.text}`);
  return { licenseKey: res.body.data.licenseKey, firmaId: res.body.data.firmaId, password };
}

/** What a harness needs of the service it drives (the in-process service, or the deployed processes). */
export type ServiceHandle = Pick<Service, 'port' | 'worker' | 'stop'>;

/** Pino's numbers of the levels a test may ask its logs at. */
const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50 } as const;
type LogLevel = keyof typeof LEVELS;

export class Harness implements Client {
  readonly url: string;
  /** the service's key names (src/redis/keys.ts) */
  readonly keys: KeySpace;

  constructor(
    readonly service: ServiceHandle,
    readonly config: Config,
    /** a client of the test's own, for looking at (and breaking) Redis */
    readonly redis: Redis,
    /** a client of the test's own, with search_path set to the test's schema */
    readonly sql: postgres.Sql,
    /** the service's log records so far (with HarnessOptions.logLevel), else none */
    private readonly logsOf: () => Record<string, unknown>[] = () => [],
    /** the processes, when the service runs as deployed (startHarness); null in-process */
    readonly deployment: DeployedService | null = null,
    /** Redis as the service reaches it (a Cluster's client too), for what the service's own code reads (the usage lag) */
    private readonly serviceRedis: RedisClient | null = null,
  ) {
    this.url = `http://127.0.0.1:${service.port}`;
    this.keys = new KeySpace(config.redisPrefix);
  }

  /** The log records of every process of the service so far, at the level the test asked for (HarnessOptions.logLevel) and above. */
  get logs(): Record<string, unknown>[] {
    return this.logsOf();
  }

  get prefix(): string {
    return this.config.redisPrefix;
  }

  /** One request (a string body is sent as it is, any other as JSON); throws when no answer comes. */
  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    return answerOf(await call(this.url, method, path, body, headers, REQUEST_TIMEOUT_MS), `${method} ${path}`);
  }

  admin(method: string, path: string, body?: unknown): Promise<Answer> {
    return this.request(method, path, body, { authorization: `Bearer ${ADMIN_TOKEN}` });
  }

  /** Creates a license through the admin API; defaults: quota 10, a year ahead, active, any origin. */
  createLicense(input: LicenseInput = {}): Promise<TestLicense> {
    return createLicense(this, input);
  }

  getToken(licenseKey: string, password: string, imzaTipi: number = 0): Promise<Answer> {
    return this.request('POST', '/api/v1/auth/get-token', { licenseKey, password, imzaTipi });
  }

  signToken(accessToken: string, imzaTipi: number = 0): Promise<Answer> {
    return this.request('POST', '/api/v1/auth/sign-token', { imzaTipi }, { authorization: `Bearer ${accessToken}` });
  }

  validate(token: unknown, origin?: unknown): Promise<Answer> {
    return this.request('POST', '/api/license/validate', origin === undefined ? { token } : { token, origin });
  }

  checkQuota(licenseKey: string): Promise<Answer> {
    return this.request('GET', `/api/License/check-quota/${licenseKey}`);
  }

  history(licenseKey: string, accessToken: string, query = ''): Promise<Answer> {
    return this.request('GET', `/api/License/history/${licenseKey}${query}`, undefined, {
      authorization: `Bearer ${accessToken}`,
    });
  }

  ledger(licenseKey: string, accessToken: string, query = ''): Promise<Answer> {
    return this.request('GET', `/api/License/ledger/${licenseKey}${query}`, undefined, {
      authorization: `Bearer ${accessToken}`,
    });
  }

  /**
   * Waits until the usage worker has moved every event to Postgres: the streams' lag as the
   * worker reads it (src/usage/lag.ts), through the test's own Redis client when the worker
   * runs in another process (a server process, or `npm run worker` beside RUN_WORKER=0).
   */
  /** The license's used_quota as Postgres holds it (undefined: no such license). */
  async postgresUsedQuota(firmaId: string): Promise<number | undefined> {
    const [row] = await this.sql`select used_quota::int as used from licenses where firma_id = ${firmaId}`;
    return row?.used as number | undefined;
  }

  async drainWorker(timeoutMs = 10_000): Promise<void> {
    const worker = this.service.worker;
    const redis = this.serviceRedis;
    const lag = worker ? () => worker.lag() : redis ? () => usageLag(redis, this.keys) : null;
    if (!lag) throw new Error('this service runs no worker');
    // asked again after a failed read: on a Redis Cluster a command caught by a failover's
    // closing connection fails once (src/redis/client.ts, retryDelayOnFailover)
    let failed = '';
    await waitFor(() => `the usage worker to drain${failed}`,
      async () => (await lag().catch((err: unknown) => { failed = ` (last read failed: ${String(err)})`; return -1; })) === 0, timeoutMs, 20);
  }

  /** The environment of a standalone usage worker (`npm run worker`, processes.spawnWorker) on this service's Redis and Postgres; overrides win. */
  workerEnv(overrides: Record<string, string> = {}): Record<string, string> {
    return {
      REDIS_URL: this.config.redisUrl, DATABASE_URL: this.config.databaseUrl, REDIS_PREFIX: this.prefix, PG_SCHEMA: this.config.pgSchema,
      ...overrides,
    };
  }

  /** Deletes every Redis key of this service (what a Redis restart without persistence does). */
  async flushRedis(): Promise<void> {
    await deleteKeys(this.redis, this.prefix);
  }

  /** Puts a license row straight into Postgres (no admin API, so no instance hears of it), copied from an existing one. */
  async insertLicenseDirectly(licenseKey: string, copyOf: string): Promise<string> {
    const firmaId = randomBytes(9).toString('base64url');
    const inserted = await this.sql`
      insert into licenses (firma_id, license_key, organization_name, password_hash, total_quota, used_quota,
                            expiry_date, is_active, domains, packages_made)
      select ${firmaId}, ${licenseKey}, organization_name, password_hash, total_quota, 0, expiry_date, is_active, domains, 1
      from licenses where license_key = ${copyOf}
      returning firma_id`;
    if (inserted.length !== 1) throw new Error('insertLicenseDirectly: no row copied');
    // its quota as one package, as every license holds it (sql/010_packages_ledger.sql)
    await this.sql`
      insert into license_packages (firma_id, package_no, amount, expires_at)
      select firma_id, 1, total_quota, expiry_date from licenses where firma_id = ${firmaId} and total_quota > 0`;
    return firmaId;
  }

  /** What an admin change on another instance does: the license key announced on the invalidation channel. */
  async announceKey(licenseKey: string): Promise<void> {
    await this.redis.publish(this.keys.invalidationChannel, licenseKey);
    await sleep(100);
  }
}

export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

export function uniqueName(label: string): string {
  return `t_${label.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(0, 20)}_${randomBytes(4).toString('hex')}`;
}

/** The environment a test service starts with; overrides win. */
export function testEnv(label: string, overrides: Record<string, string> = {}): Record<string, string> {
  const name = uniqueName(label);
  return {
    ALLOW_HTTP: '1',
    JWT_SECRET: randomBytes(32).toString('hex'),
    SIGNING_KEYS: TEST_SIGNING_KEY,
    ADMIN_TOKEN,
    PORT: '0',
    HOST: '127.0.0.1',
    REDIS_URL,
    REDIS_PREFIX: name,
    DATABASE_URL,
    PG_SCHEMA: name,
    LOG_LEVEL: 'silent',
    ...overrides,
  };
}

/**
 * The test's own clients on the Redis and Postgres of a service's config (Postgres directly,
 * search_path = its schema), and at teardown the service's Redis keys deleted, its schema
 * dropped (unless `cleanup` is false: storage another harness of the test owns and removes)
 * and the clients closed. Register it before anything that uses the storage: tap runs
 * teardowns last-in, first-out.
 */
/** A cleanup step that gives up after 2 s (the step's own resources are then closed by force). */
function bounded(step: Promise<unknown>): Promise<unknown> {
  return Promise.race([step.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
}

export function testStorage(t: Teardown, config: Config, cleanup = true): { redis: Redis; sql: postgres.Sql } {
  const redis = new Redis(config.redisUrl);
  const sql = postgres(DATABASE_URL, { onnotice: () => {}, max: 2, connection: { search_path: config.pgSchema } });
  t.teardown(async () => {
    if (cleanup) {
      await deleteKeys(redis, config.redisPrefix);
      await sql.unsafe(`drop schema if exists "${config.pgSchema}" cascade`);
    }
    // bounded: a Redis a test failed over may leave the client reconnecting, and QUIT waiting, for good
    await Promise.all([bounded(redis.quit()).finally(() => redis.disconnect()), sql.end({ timeout: 2 })]);
  });
  return { redis, sql };
}

/** A second instance of another harness's deployment (its REDIS_PREFIX and PG_SCHEMA given): that harness removes the storage. */
function joinsStorage(overrides: Record<string, string>): boolean {
  return overrides.REDIS_PREFIX !== undefined && overrides.PG_SCHEMA !== undefined;
}

export interface HarnessOptions {
  /** keep the service's log records at this level and above in harness.logs (default: none) */
  logLevel?: LogLevel;
}

/** Records at `level` and above; none without a level. */
function atLevel(records: Record<string, unknown>[], level: LogLevel | undefined): Record<string, unknown>[] {
  if (level === undefined) return [];
  return records.filter((r) => typeof r.level === 'number' && r.level >= LEVELS[level]);
}

/**
 * Starts the service for one test file as `npm start` runs it (WORKERS unset: a primary and
 * one server process per core on one port) and registers its cleanup: every process stopped
 * (SIGKILLed if it does not stop), its Redis keys deleted and its Postgres schema dropped.
 * `overrides` win over the test environment (testEnv); WORKERS among them runs that many.
 */
export async function startHarness(
  t: Teardown, label: string, overrides: Record<string, string> = {}, options: HarnessOptions = {},
): Promise<Harness> {
  // readiness is the primary's info line: the processes log at info or below, the test sees its own level
  const processLevel = options.logLevel === 'trace' || options.logLevel === 'debug' ? options.logLevel : 'info';
  const env = testEnv(label, { ...overrides, LOG_LEVEL: processLevel });
  if (env.WORKERS === DEFAULT_WORKERS) delete env.WORKERS; // as npm start with WORKERS unset
  const config = loadConfig(env);
  const { redis, sql } = testStorage(t, config, !joinsStorage(overrides));
  const serviceRedis = createRedis(config, 'test-harness');
  // bounded: a Sentinel client whose sentinels are gone would wait for them for good
  t.teardown(() => bounded(serviceRedis.quit()).finally(() => serviceRedis.disconnect()));
  const deployed = await startDeployed(t, env);
  return new Harness(deployed, config, redis, sql, () => atLevel(deployed.server.records(), options.logLevel), deployed, serviceRedis);
}

/**
 * Starts the service in the test's own process (one server process), for a test that needs
 * what only that gives: the usage worker object (stopped, lag read directly), the logger's
 * records as written, the timing of one process. Cleanup as startHarness.
 */
export async function startInProcessHarness(
  t: Teardown, label: string, overrides: Record<string, string> = {}, options: HarnessOptions = {},
): Promise<Harness> {
  const config = loadConfig(testEnv(label, overrides));
  const { redis, sql } = testStorage(t, config, !joinsStorage(overrides));
  const logs: Record<string, unknown>[] = [];
  const logger = options.logLevel === undefined
    ? createLogger('silent')
    : pino({ level: options.logLevel }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  // loaded here: most test files start the service as npm start does, and loading the whole
  // service into every test process (under tap's module hooks) costs each about a second of CPU
  const { startService } = await import('../../src/service.js');
  const service = await startService(config, logger);
  t.teardown(() => service.stop()); // before the storage's cleanup (last in, first out)
  return new Harness(service, config, redis, sql, () => logs);
}
