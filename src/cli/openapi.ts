import { writeFileSync } from 'node:fs';
import { ConfigError, loadConfig } from '../config.js';
import { offlineDocument } from '../openapi/offline.js';
import { DevEnvError, loadDevEnv } from './devEnv.js';

// npm run openapi -- [file]: writes the OpenAPI document this environment's configuration
// would serve at GET /openapi.json (to stdout without a file), without starting the service
// or reaching Redis and Postgres. `npm run lint:openapi` lints it with Redocly.
//
// The document does not depend on secrets (nor on whether signing keys are set: it documents
// the 503 of an instance without them either way), so JWT_SECRET and ALLOW_HTTP (refused
// starts for a server) are filled in when the environment has none; every other variable
// (ADMIN_TOKEN, the RATE_* limits, CORS_ORIGINS, METRICS...) is read as the server reads it:
// from the environment and, in a `make run` checkout, its .env.dev beneath it (./devEnv.ts).
function environment(): Record<string, string | undefined> {
  const env = loadDevEnv({ ...process.env });
  if (!env.JWT_SECRET && !env.JWT_SECRETS) env.JWT_SECRET = 'document-only-placeholder-secret-0123456789';
  if (!env.TLS_CERT_FILE) env.ALLOW_HTTP = '1';
  return env;
}

try {
  const json = offlineDocument(loadConfig(environment()));
  const file = process.argv[2];
  if (file) writeFileSync(file, `${json}\n`);
  else process.stdout.write(`${json}\n`);
} catch (err) {
  process.stderr.write(`openapi: ${err instanceof ConfigError || err instanceof DevEnvError ? err.message : (err as Error).stack ?? String(err)}\n`);
  process.exit(1);
}
