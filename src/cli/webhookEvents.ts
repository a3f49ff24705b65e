import type { Config } from '../config.js';
import { connectPostgres } from '../db/pg.js';
import { WebhookOutbox } from '../webhooks/outbox.js';
import { runOperatorCommand } from './operatorCommand.js';

// npm run webhook-events -- count | list | replay [id ...]
// Webhook events whose every attempt failed are kept in the outbox. `count` prints how
// many events wait, were delivered and failed; `list` prints the failed ones (one JSON
// line each: id, type, attempts, the last status and error); `replay` puts them back in
// line (all, or the ids or event keys given) with a fresh count of attempts, and the
// running workers send them again.
async function main(config: Config, command: string, ids: string[]): Promise<number> {
  const sql = await connectPostgres(config.databaseUrl, config.pgSchema, 1);
  const outbox = new WebhookOutbox(sql);
  try {
    if (command === 'count') {
      process.stdout.write(`${JSON.stringify(await outbox.counts())}\n`);
    } else if (command === 'list') {
      for (const event of await outbox.failed()) process.stdout.write(`${JSON.stringify(event)}\n`);
    } else if (command === 'replay') {
      process.stdout.write(`replayed ${await outbox.replay(ids)} failed webhook event(s)\n`);
    } else {
      process.stderr.write('usage: npm run webhook-events -- count | list | replay [id ...]\n');
      return 2;
    }
    return 0;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

runOperatorCommand('webhook-events', 'count', main);
