import type { Config } from '../config.js';
import { createLogger } from '../log.js';
import { NO_METRICS } from '../metrics/registry.js';
import { artefactSignerOf } from '../tokens/signingKeys.js';
import type { RouteContext } from './context.js';
import { serviceRoutes } from './index.js';

// The document a configuration serves, built without starting the service: the very routes
// the service would register, made with a context that holds only what route factories
// read while they are built (the configuration, a log, metrics that record nothing). No
// handler runs here, so every connection and use case is left out: touching one throws,
// naming it, which is what a factory that starts reading one at build time should meet.

function notConnected(name: string): never {
  return new Proxy({}, {
    get(_target, property) {
      throw new Error(`${name}.${String(property)}: the document is built without connections (src/routes/offline.ts)`);
    },
  }) as never;
}

/**
 * The JSON of GET /openapi.json (`part` public) or GET /admin/openapi.json (admin) as a
 * service with this configuration would serve it; the admin document needs an admin token
 * in the configuration (without one the service serves neither the admin API nor its document).
 */
export function offlineDocument(config: Config, part: 'public' | 'admin' = 'public'): string {
  const ctx: RouteContext = {
    config,
    log: createLogger('warn'),
    metrics: NO_METRICS,
    sql: notConnected('sql'),
    redis: notConnected('redis'),
    keys: notConnected('keys'),
    tokens: notConnected('tokens'),
    artefacts: artefactSignerOf(config.signingKeys),
    store: notConnected('store'),
    hot: notConnected('hot'),
    passwords: notConnected('passwords'),
    logins: notConnected('logins'),
    issuer: notConnected('issuer'),
    redeemer: notConnected('redeemer'),
    releaser: notConnected('releaser'),
    admin: notConnected('admin'),
  };
  const documentPath = part === 'public' ? '/openapi.json' : '/admin/openapi.json';
  const route = serviceRoutes(ctx).find((r) => r.path === documentPath);
  if (!route) throw new Error(`no ${documentPath} route${part === 'admin' ? ': ADMIN_TOKEN and ADMIN_TOKENS are unset' : ''}`);
  const reply = route.handler({
    method: 'get', path: route.path, params: [], query: '', authorization: '', clientAddress: '', clientAddressNow: undefined, idempotencyKey: '',
    accept: '', acceptEncoding: '', ifNoneMatch: '', body: null, aborted: false,
  });
  if (reply instanceof Promise) throw new Error(`${documentPath} answers from memory`);
  return typeof reply.body === 'string' ? reply.body : Buffer.from(reply.body).toString('utf8');
}
