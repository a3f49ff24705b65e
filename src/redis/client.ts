import { Redis, Cluster } from 'ioredis';
import type { Config } from '../config.js';
import { defineScripts, type ScriptClient } from './scripts.js';

export type RedisClient = (Redis | Cluster) & ScriptClient;

/** One client for a single Redis or a Redis Cluster; the scripts are defined on it once. */
export function createRedis(config: Config, name: string): RedisClient {
  const options = {
    connectionName: name,
    enableAutoPipelining: false, // measured: slower behind uWS (see bench/README.md)
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
  };
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

/** A second connection of the same kind, for blocking reads and subscriptions. */
export function duplicateRedis(client: RedisClient): RedisClient {
  const copy: Redis | Cluster = isCluster(client) ? client.duplicate() : (client as Redis).duplicate();
  copy.on('error', () => {});
  defineScripts(copy);
  return copy as RedisClient;
}
