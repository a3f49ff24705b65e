import type { Config } from '../config.js';
import { connectExisting } from '../db/existing.js';
import { WebhookOutbox } from '../webhooks/outbox.js';
import { runOperatorCommand } from './operatorCommand.js';

// npm run webhook-events -- count | list | replay [id ...]
// Webhook events whose every attempt failed are kept in the outbox. `count` prints how
// many events wait, were delivered and failed; `list` prints the failed ones (one JSON
// line each: id, type, attempts, the last status and error); `replay` puts them back in
// line (all, or the ids or event keys given) with a fresh count of attempts, and the
// running workers send them again. It reads the database and schema the service made and
// never creates or migrates them (src/db/existing.ts).
async function main(config: Config, command: string, ids: string[]): Promise<number> {
  const sql = await connectExisting(config.databaseUrl, config.pgSchema, 1, 'license-webhook-events');
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
