import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../config.js';
import { ConfigError } from '../config/vars.js';
import { offlineDocument } from '../routes/offline.js';
import { DevEnvError, loadDevEnv } from './devEnv.js';

// npm run openapi -- [--admin] [file]: writes the OpenAPI document this environment's
// configuration would serve at GET /openapi.json (the public API), or with --admin at GET
// /admin/openapi.json (the admin API), to stdout without a file, without starting the
// service or reaching Redis and Postgres. `npm run lint:openapi` lints both with Redocly.
//
// The documents do not depend on secrets (nor on whether signing keys are set: the public
// one documents the 503 of an instance without them either way), so JWT_SECRET and
// ALLOW_HTTP (refused starts for a server) are filled in when the environment has none, and
// so is an admin token for --admin (an instance without one serves no admin API and no admin
// document, but the document of one that does is the same); every other variable (the RATE_*
// limits, CORS_ORIGINS, METRICS...) is read as the server reads it: from the environment
// and, in a `make run` checkout, its .env.dev beneath it (./devEnv.ts).
function environment(admin: boolean): Record<string, string | undefined> {
  const env = loadDevEnv({ ...process.env });
  // random, never used (no token is signed, no request made): a fixed one reads as a placeholder, which the configuration refuses
  const secret = (): string => randomBytes(32).toString('base64url');
  if (!env.JWT_SECRET && !env.JWT_SECRETS) env.JWT_SECRET = secret();
  if (!env.TLS_CERT_FILE) env.ALLOW_HTTP = '1';
  if (admin && !env.ADMIN_TOKEN && !env.ADMIN_TOKENS) env.ADMIN_TOKEN = secret();
  return env;
}

try {
  const args = process.argv.slice(2);
  const admin = args.includes('--admin');
  const [file, ...rest] = args.filter((a) => a !== '--admin');
  if (rest.length > 0 || file?.startsWith('-')) throw new ConfigError('usage: npm run openapi -- [--admin] [file]');
  const json = offlineDocument(loadConfig(environment(admin)), admin ? 'admin' : 'public');
  if (file) writeFileSync(file, `${json}\n`);
  else process.stdout.write(`${json}\n`);
} catch (err) {
  process.stderr.write(`openapi: ${err instanceof ConfigError || err instanceof DevEnvError ? err.message : (err as Error).stack ?? String(err)}\n`);
  process.exit(1);
}
