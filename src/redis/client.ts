import { Redis, Cluster, Command } from 'ioredis';
import type { Config } from '../config.js';
import { attachScripts } from './library.js';
import type { ScriptClient } from './scriptCall.js';

export type RedisClient = (Redis | Cluster) & ScriptClient;

/** What the timeout below reads and sets of an ioredis Command (its timer field is private in the types). */
interface TimedCommand {
  _commandTimeoutTimer?: NodeJS.Timeout;
  isSettled: boolean;
  reject(err: Error): void;
}

/**
 * A command's timeout, as ioredis arms it for every connection (commandTimeout), with one
 * change: it fails the command one turn of the event loop later, and only if its answer has
 * still not been read. Timers run first in a turn, before its sockets are read: after the
 * process stalled (a loaded machine, a long collection) a command whose answer had arrived
 * meanwhile failed at its timeout before that answer was read, and its request answered 503
 * for what the script had done (a unit spent, a token issued: seen in test/faults/redis.paused
 * on a loaded machine). setImmediate runs after the turn has read its sockets.
 * An answer that has not arrived by then fails as before, and a script that runs past its
 * deadline changes nothing (src/redis/clock.ts).
 */
Command.prototype.setTimeout = function failLate(this: Command, ms: number): void {
  const command = this as unknown as TimedCommand;
  if (command._commandTimeoutTimer) return;
  command._commandTimeoutTimer = setTimeout(() => {
    setImmediate(() => {
      if (!command.isSettled) command.reject(new Error('Command timed out'));
    });
  }, ms);
};

/** What the guard below reads of an ioredis client (private in the types). */
interface ClosingState {
  manuallyClosing?: boolean;
}

const CONNECTION_CLOSED = 'Connection is closed.';
const RACE_RECONNECT_MS = 100;

/**
 * A Sentinel client's failover detector closes its connector when the sentinels announce a
 * new master. If the client is reconnecting at that moment (the old master just died), the
 * connect in progress fails with "Connection is closed." and ioredis ends the client for
 * good: that process would answer 503 until restarted (seen in test/faults/ha.sentinel on a
 * loaded machine, on the test's own client). Such an end is the race's, not a close of
 * ours (disconnect() marks the client as closing): the client connects again.
 */
function reconnectAfterFailoverRace(redis: Redis | Cluster): void {
  // only a Sentinel client has the detector (a duplicate keeps its options); any other is left alone
  if (isCluster(redis) || !redis.options.sentinels) return;
  const client: Redis = redis;
  let raced = false;
  client.on('error', (err: Error) => {
    if (err.message === CONNECTION_CLOSED) raced = true;
  });
  const ours = () => (client as unknown as ClosingState).manuallyClosing === true;
  client.on('end', () => {
    if (raced && !ours()) {
      // after the end has been told to every listener; unless it is closed meanwhile
      setTimeout(() => {
        if (client.status === 'end' && !ours()) client.connect().catch(() => {});
      }, RACE_RECONNECT_MS).unref();
    }
    raced = false;
  });
}

/**
 * Options of every connection. A command that gets no answer within the timeout fails
 * (the request answers 503) instead of waiting for TCP to give up on a hung Redis.
 * Commands that were sent when a connection dropped are not sent again: a script may have
 * run before the drop, and running it twice would answer "already used" to the client
 * whose redemption it was. (ioredis then neither answers nor fails them when the
 * connection comes back quickly: they fail at their timeout.) The request path's connection has no offline queue: while
 * it is down a call fails at once (503) rather than wait, and nothing queued runs when it
 * comes back before src/redis/restarts.ts has looked at the Redis it came back to. Calls
 * that reach a Redis late anyway (one paused with calls in its socket) find the scripts
 * that change state past their deadline (lua/includes/deadline.lua): nothing changes.
 */
function connectionOptions(name: string, commandTimeoutMs: number, offlineQueue: boolean) {
  return {
    connectionName: name,
    enableAutoPipelining: false, // measured: slower behind uWS (see bench/README.md)
    maxRetriesPerRequest: 2,
    enableOfflineQueue: offlineQueue,
    autoResendUnfulfilledCommands: false,
    commandTimeout: commandTimeoutMs,
  };
}

/**
 * One client for a single Redis or a Redis Cluster; the scripts are defined on it once.
 * offlineQueue false (the request path): wait for `whenReady` before the first call.
 */
export function createRedis(
  config: Config, name: string, { offlineQueue = true, commandTimeoutMs = config.redisCommandTimeoutMs } = {},
): RedisClient {
  const options = connectionOptions(name, commandTimeoutMs, offlineQueue);
  const sentinel = config.redisSentinel;
  const client =
    config.redisClusterNodes.length > 0
      ? new Cluster(config.redisClusterNodes, {
        redisOptions: { ...options, ...config.redisAuth },
        enableOfflineQueue: offlineQueue,
        // a Cluster sends a command whose connection closed again, to whichever node then holds
        // its slot (autoResendUnfulfilledCommands is a single connection's): a script that ran
        // before the close would run twice. 0 fails it instead, as on a single Redis
        retryDelayOnFailover: 0,
      })
      : sentinel !== null
        ? new Redis({
          ...options, ...config.redisAuth,
          sentinels: sentinel.sentinels, name: sentinel.masterName,
          ...(sentinel.username ? { sentinelUsername: sentinel.username } : {}),
          ...(sentinel.password ? { sentinelPassword: sentinel.password } : {}),
          // the sentinels' +switch-master ends the connection to a master they replaced at once,
          // rather than when it fails: one cut off from the sentinels but not from us takes no more writes
          failoverDetector: true,
        })
        : new Redis(config.redisUrl, options);
  client.on('error', () => {
    // reported through the failing commands; an unhandled 'error' event would crash the process
  });
  reconnectAfterFailoverRace(client);
  attachScripts(client);
  return client as RedisClient;
}

/** Resolves once the client is connected and ready; rejects after timeoutMs. */
export function whenReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Redis not ready within ${timeoutMs} ms`)), timeoutMs);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
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
  // subscriptions and the worker's reads may wait in the offline queue (their timeouts hold)
  const copy: Redis | Cluster = isCluster(client)
    ? client.duplicate(undefined, { enableOfflineQueue: true, redisOptions: { ...base, commandTimeout: timeout, enableOfflineQueue: true } })
    : (client as Redis).duplicate({ commandTimeout: timeout, enableOfflineQueue: true });
  copy.on('error', () => {});
  reconnectAfterFailoverRace(copy);
  attachScripts(copy);
  return copy as RedisClient;
}
