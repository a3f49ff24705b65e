import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startService, type Service } from '../../src/service.js';

// Every test file runs its own service against the real local Redis and Postgres, isolated
// by its own REDIS_PREFIX and PG_SCHEMA, and removes both when it ends.

export const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** Every rate limit off, for tests that send many requests. */
export const NO_RATE_LIMITS: Record<string, string> = {
  RATE_GET_TOKEN_PER_MIN: '0',
  RATE_SIGN_TOKEN_PER_MIN: '0',
  RATE_VALIDATE_PER_MIN: '0',
  RATE_CHECK_QUOTA_PER_MIN: '0',
};

/** No rate limits and no check-quota cache: every answer shows the live counts. */
export const LIVE_COUNTS: Record<string, string> = { ...NO_RATE_LIMITS, QUOTA_CACHE_SECONDS: '0' };

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Answer<T = any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface LicenseInput {
  organizationName?: string;
  password?: string;
  totalQuota?: number;
  expiryDate?: string;
  isActive?: boolean;
  domains?: string[];
  licenseKey?: string;
}

export class Harness {
  readonly url: string;

  constructor(
    readonly service: Service,
    readonly config: Config,
    /** a client of the test's own, for looking at (and breaking) Redis */
    readonly redis: Redis,
    /** a client of the test's own, with search_path set to the test's schema */
    readonly sql: postgres.Sql,
  ) {
    this.url = `http://127.0.0.1:${service.port}`;
  }

  get prefix(): string {
    return this.config.redisPrefix;
  }

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await fetch(this.url + path, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  admin(method: string, path: string, body?: unknown): Promise<Answer> {
    return this.request(method, path, body, { authorization: `Bearer ${ADMIN_TOKEN}` });
  }

  /** Creates a license through the admin API; defaults: quota 10, a year ahead, active, any origin. */
  async createLicense(input: LicenseInput = {}): Promise<{ licenseKey: string; firmaId: string; password: string }> {
    const password = input.password ?? 'correct horse battery staple';
    const res = await this.admin('POST', '/admin/v1/licenses', {
      organizationName: 'Test A.Ş.',
      totalQuota: 10,
      expiryDate: new Date(Date.now() + 365 * 86400_000).toISOString(),
      ...input,
      password,
    });
    if (res.status !== 201) throw new Error(`createLicense: ${res.status} ${res.text}`);
    return { licenseKey: res.body.data.licenseKey, firmaId: res.body.data.firmaId, password };
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

  /** Waits until the usage worker has moved every event to Postgres. */
  async drainWorker(timeoutMs = 10_000): Promise<void> {
    const worker = this.service.worker;
    if (!worker) throw new Error('this service runs no worker');
    const until = Date.now() + timeoutMs;
    while ((await worker.lag()) > 0) {
      if (Date.now() > until) throw new Error('usage worker did not drain');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Deletes every Redis key of this service (what a Redis restart without persistence does). */
  async flushRedis(): Promise<void> {
    await deleteKeys(this.redis, this.prefix);
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
 * Starts a service for one test file and registers its cleanup: the service stopped, its
 * Redis keys deleted and its Postgres schema dropped.
 */
export async function startHarness(t: Teardown, label: string, overrides: Record<string, string> = {}): Promise<Harness> {
  const env = testEnv(label, overrides);
  const config = loadConfig(env);
  const service = await startService(config, createLogger('silent'));
  const redis = new Redis(env.REDIS_URL ?? REDIS_URL);
  const sql = postgres(DATABASE_URL, { onnotice: () => {}, max: 2, connection: { search_path: config.pgSchema } });
  const harness = new Harness(service, config, redis, sql);
  t.teardown(async () => {
    await service.stop();
    await deleteKeys(redis, config.redisPrefix);
    await sql.unsafe(`drop schema if exists "${config.pgSchema}" cascade`);
    await Promise.all([redis.quit(), sql.end({ timeout: 2 })]);
  });
  return harness;
}
