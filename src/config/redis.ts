import { ConfigError, intVar, ownSecret, parseNodes, type Env } from './vars.js';

// The Redis settings that are more than one variable read alone: the start-up check of
// Redis's configuration, the replicas a redemption waits for, the credentials of the Redis
// servers and of Sentinel. One concern: how the service reaches Redis and what it demands
// of it, with the checks between these variables (a wait shorter than a call's timeout,
// Sentinel or Cluster, not both).

/**
 * refuse: an evicting maxmemory-policy refuses the start, an unreadable configuration is
 * a warning; strict: both refuse; warn: both are warnings; off: no check.
 */
export const REDIS_CONFIG_CHECKS = ['refuse', 'strict', 'warn', 'off'] as const;
export type RedisConfigCheck = (typeof REDIS_CONFIG_CHECKS)[number];

export function redisConfigCheck(env: Env): RedisConfigCheck {
  const raw = env.REDIS_CONFIG_CHECK || 'refuse';
  const mode = REDIS_CONFIG_CHECKS.find((m) => m === raw);
  if (!mode) throw new ConfigError(`REDIS_CONFIG_CHECK must be one of ${REDIS_CONFIG_CHECKS.join(', ')}, got "${raw}"`);
  return mode;
}

export function redisWait(env: Env): { replicas: number; timeoutMs: number } {
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

export function redisAuth(env: Env): { username?: string; password?: string } {
  const username = redisCredential(env, 'REDIS_USERNAME');
  const password = redisCredential(env, 'REDIS_PASSWORD');
  return { ...(username ? { username } : {}), ...(password ? { password } : {}) };
}

export function redisSentinel(env: Env): RedisSentinel | null {
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
