import type { Config } from '../config.js';
import { createRedis } from '../redis/client.js';
import { KeySpace } from '../redis/keys.js';
import { DeadLetters } from '../usage/deadLetters.js';
import { runOperatorCommand } from './operatorCommand.js';
import { shownUrl } from '../db/existing.js';

/** Where the command reads: the cluster's nodes, the sentinels' master, or REDIS_URL without its password. */
function redisShown(config: Config): string {
  const list = (nodes: { host: string; port: number }[]) => nodes.map((n) => `${n.host}:${n.port}`).join(',');
  if (config.redisClusterNodes.length > 0) return `cluster ${list(config.redisClusterNodes)}`;
  if (config.redisSentinel !== null) return `sentinel master ${config.redisSentinel.masterName} at ${list(config.redisSentinel.sentinels)}`;
  return shownUrl(config.redisUrl);
}

// npm run dead-letters -- list | count | replay [id ...]
// Usage events Postgres refused for good wait in the dead-letter stream. `list` prints
// them (one JSON line each: where the event was queued, its fields and Postgres's error),
// `replay` puts them back on their usage streams once the cause is fixed (all, or the
// dead-letter or original ids given); the running workers then write them.
async function main(config: Config, command: string, ids: string[]): Promise<number> {
  if (!['count', 'list', 'replay'].includes(command)) {
    process.stderr.write('usage: npm run dead-letters -- list | count | replay [id ...]\n');
    return 2;
  }
  // an unused prefix reads as no dead letters, which is right but easy to take for the real
  // answer: say which prefix (and Redis) was read, beside the answer
  process.stderr.write(`dead-letters: Redis prefix "${config.redisPrefix}" at ${redisShown(config)}\n`);
  const redis = createRedis(config, 'license-dead-letters');
  // why a connection failed (ECONNREFUSED, a refused password), for the one line below
  let connectionError = '';
  redis.on('error', (err: Error) => { connectionError = err.message; });
  const letters = new DeadLetters(redis, new KeySpace(config.redisPrefix).deadLetters);
  try {
    await redis.ping().catch((err: unknown) => {
      throw new Error(`cannot reach Redis at ${redisShown(config)} (${connectionError || (err as Error).message}): check REDIS_URL`);
    });
    if (command === 'count') {
      process.stdout.write(`${await letters.count()}\n`);
    } else if (command === 'list') {
      for (const letter of await letters.list()) process.stdout.write(`${JSON.stringify(letter)}\n`);
    } else {
      const replayed = await letters.replay(ids);
      process.stdout.write(`replayed ${replayed} dead letter(s) onto their usage streams\n`);
    }
    return 0;
  } finally {
    await redis.quit().catch(() => {});
  }
}

runOperatorCommand('dead-letters', 'list', main);
