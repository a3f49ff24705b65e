import { Redis, Cluster } from 'ioredis';
import type { Config } from '../config.js';
import { defineScripts, type ScriptClient } from './scripts.js';

export type RedisClient = (Redis | Cluster) & ScriptClient;

/**
 * Options of every connection. A command that gets no answer within the timeout fails
 * (the request answers 503) instead of waiting for TCP to give up on a hung Redis.
 * Commands that were sent when a connection dropped are failed, not sent again: a script
 * may have run before the drop, and running it twice would answer "already used" to the
 * client whose redemption it was. Commands never sent wait in the offline queue until
 * their timeout; the scripts that change state carry a deadline and do nothing when they
 * reach Redis after it (lua/includes/deadline.lua).
 */
function connectionOptions(name: string, commandTimeoutMs: number) {
  return {
    connectionName: name,
    enableAutoPipelining: false, // measured: slower behind uWS (see bench/README.md)
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    autoResendUnfulfilledCommands: false,
    commandTimeout: commandTimeoutMs,
  };
}

/** One client for a single Redis or a Redis Cluster; the scripts are defined on it once. */
export function createRedis(config: Config, name: string, extraTimeoutMs = 0): RedisClient {
  const options = connectionOptions(name, config.redisCommandTimeoutMs + extraTimeoutMs);
  const client =
    config.redisClusterNodes.length > 0
      ? new Cluster(config.redisClusterNodes, { redisOptions: options, enableOfflineQueue: true })
      : new Redis(config.redisUrl, options);
  client.on('error', () => {
    // reported through the failing commands; an unhandled 'error' event would crash the process
  });
  defineScripts(client);
  return client as RedisClient;
}

export function isCluster(client: Redis | Cluster): client is Cluster {
  return client instanceof Cluster;
}

/**
 * A second connection of the same kind, for blocking reads and subscriptions; a blocking
 * read may wait extraTimeoutMs longer than the command timeout before it counts as hung.
 */
export function duplicateRedis(client: RedisClient, extraTimeoutMs = 0): RedisClient {
  const base = isCluster(client) ? client.options.redisOptions ?? {} : (client as Redis).options;
  const timeout = (base.commandTimeout ?? 1000) + extraTimeoutMs;
  const copy: Redis | Cluster = isCluster(client)
    ? client.duplicate(undefined, { redisOptions: { ...base, commandTimeout: timeout } })
    : (client as Redis).duplicate({ commandTimeout: timeout });
  copy.on('error', () => {});
  defineScripts(copy);
  return copy as RedisClient;
}
