import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Sql } from '../db/pg.js';
import type { HotLicenses } from '../licenses/hot.js';
import type { Passwords } from '../licenses/passwords.js';
import type { LicenseStore } from '../licenses/store.js';
import type { RedisClient } from '../redis/client.js';
import type { RedisClock } from '../redis/clock.js';
import type { RedisRestarts } from '../redis/restarts.js';
import type { IssueBatcher } from '../redis/issueBatcher.js';
import type { KeySpace } from '../redis/keys.js';
import type { TokenService } from '../tokens/jwt.js';
import type { QuotaCache } from './quotaCache.js';

/** What the endpoints share, built once at start. */
export interface ApiContext {
  config: Config;
  log: Logger;
  sql: Sql;
  redis: RedisClient;
  /** deadlines of the scripts that change state, in Redis's clock */
  clock: RedisClock;
  /** what the scripts wait for after Redis comes back */
  restarts: RedisRestarts;
  keys: KeySpace;
  tokens: TokenService;
  store: LicenseStore;
  hot: HotLicenses;
  passwords: Passwords;
  quotaCache: QuotaCache;
  /** sign-token issuance, shared by get-token and sign-token so their requests batch together */
  issuer: IssueBatcher;
}

export const RATE_WINDOW_MS = 60_000;

/** License keys are UUIDs, compared case-insensitively. */
export function canonicalKey(licenseKey: string): string {
  return licenseKey.toLowerCase();
}
