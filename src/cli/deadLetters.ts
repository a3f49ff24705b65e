import type { Config } from '../config.js';
import { createRedis } from '../redis/client.js';
import { KeySpace } from '../redis/keys.js';
import { DeadLetters } from '../usage/deadLetters.js';
import { runOperatorCommand } from './operatorCommand.js';

// npm run dead-letters -- list | count | replay [id ...]
// Usage events Postgres refused for good wait in the dead-letter stream. `list` prints
// them (one JSON line each: where the event was queued, its fields and Postgres's error),
// `replay` puts them back on their usage streams once the cause is fixed (all, or the
// dead-letter or original ids given); the running workers then write them.
async function main(config: Config, command: string, ids: string[]): Promise<number> {
  const redis = createRedis(config, 'license-dead-letters');
  const letters = new DeadLetters(redis, new KeySpace(config.redisPrefix).deadLetters);
  try {
    if (command === 'count') {
      process.stdout.write(`${await letters.count()}\n`);
    } else if (command === 'list') {
      for (const letter of await letters.list()) process.stdout.write(`${JSON.stringify(letter)}\n`);
    } else if (command === 'replay') {
      const replayed = await letters.replay(ids);
      process.stdout.write(`replayed ${replayed} dead letter(s) onto their usage streams\n`);
    } else {
      process.stderr.write('usage: npm run dead-letters -- list | count | replay [id ...]\n');
      return 2;
    }
    return 0;
  } finally {
    await redis.quit().catch(() => {});
  }
}

runOperatorCommand('dead-letters', 'list', main);
