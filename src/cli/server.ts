import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { loadConfig, type Config } from '../config.js';
import { ConfigError } from '../config/vars.js';
import { createLogger, guardProcess, scrub } from '../log.js';
import { STOP_FLUSH_MS } from '../stopFlush.js';
import { ED25519_FALLBACK_WARNING, ED25519_LIBRARY } from '../tokens/ed25519.js';
import { SIGNING_KEYS_MISSING_WARNING } from '../tokens/signingKeys.js';
import { claimPort } from './portClaim.js';
import { CHILD_ENV, runPrimary, type CannotStartMessage, type ListeningMessage } from './primary.js';

// npm start: the HTTP server and the usage worker in one process; with WORKERS > 1 a
// primary that runs that many of them on one port (src/cli/primary.ts).
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`license-service: refusing to start: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const child = process.env[CHILD_ENV] !== undefined;
  // a child's every line says which child (and process) wrote it
  const log = child ? createLogger(config.logLevel).child({ child: Number(process.env[CHILD_ENV]), pid: process.pid }) : createLogger(config.logLevel);
  guardProcess(log);
  if (!child && config.workers > 1) {
    warnAtStart(config, log);
    await runPrimary(config, log, fileURLToPath(import.meta.url)).catch((err: Error) => {
      process.stderr.write(`license-service: cannot start: ${scrub(err.message)}\n`);
      process.exit(1);
    });
    return;
  }
  if (!child) warnAtStart(config, log);
  // one process on a port of its choosing: no other server may share it (PORT=0: uWS binds
  // the kernel's pick without SO_REUSEPORT, so nothing can)
  if (!child && config.port !== 0) await claimPort(config.host, config.port).catch((err: Error) => cannotStart(false, scrub(err.message)));
  // loaded here, not above: a primary (runPrimary) never runs the service, and need not load it
  const { startService } = await import('../service.js');
  const service = await startService(config, log, { child }).catch((err: Error) => cannotStart(child, scrub(err.message)));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: finishing accepted requests and flushing the usage worker');
    // the last word: whatever hangs (a dependency that accepts and never answers), the
    // process is gone SHUTDOWN_TIMEOUT_MS + STOP_FLUSH_MS + 2 s after the signal
    setTimeout(() => {
      log.error('stop took too long: exiting; queued usage events stay in Redis for the next worker');
      process.exit(1);
    }, config.shutdownTimeoutMs + STOP_FLUSH_MS + 2000).unref();
    service.stop().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err: Error) => {
        log.error({ err }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // a renewed certificate, without a restart (systemctl reload); never the default of ending the process
  process.on('SIGHUP', () => {
    if (stopping) return;
    service.reloadTls().then(
      (fingerprint) => log.info({ fingerprint }, fingerprint ? 'SIGHUP: TLS certificate reloaded for new connections' : 'SIGHUP: no TLS to reload'),
      (err: Error) => log.error({ err: scrub(err.message) }, 'SIGHUP: TLS certificate not reloaded; still serving the previous one'),
    );
  });
  if (child) {
    // a primary that is gone (killed) leaves no orphan serving on its port
    process.on('disconnect', () => stop('primary gone'));
    const listening: ListeningMessage = { type: 'listening', port: service.port };
    process.send?.(listening);
  }
}

/**
 * Clients straight at the service (TRUST_PROXY=0) in production. uWebSockets.js, not the
 * service, frames requests: what it mishandles never reaches a handler to be refused, and
 * a connection it drops after the handler ran takes the answer with it. So serving without
 * the front is for development; the warning says what it costs.
 */
const DIRECT_IN_PRODUCTION_WARNING = 'no front (TRUST_PROXY=0) under NODE_ENV=production: production needs the nginx front of deploy/nginx. ' +
  'Straight to the service, pipelined requests or a request with two Content-Length headers can spend a unit and get no answer, ' +
  'and HTTP/1.0 clients get none (docs/deployment.md, "Without a front")';

/**
 * What the configuration starts without, said once per start of the service: by the primary
 * when several processes serve (its children share its configuration and say nothing), else
 * by the one process.
 */
function warnAtStart(config: Config, log: Logger): void {
  if (config.production && config.trustProxy === 0) log.warn(DIRECT_IN_PRODUCTION_WARNING);
  else if (!config.tls) log.warn('serving plain HTTP (ALLOW_HTTP=1): put a TLS-terminating proxy in front');
  if (config.signingKeys.length === 0) log.warn(SIGNING_KEYS_MISSING_WARNING);
  else if (ED25519_LIBRARY !== 'libsodium') log.warn(ED25519_FALLBACK_WARNING);
}

/**
 * Says why the server cannot start, on stderr, and exits 1. A child tells its primary instead:
 * the children starting together meet the same cause, and the primary says it once.
 */
function cannotStart(child: boolean, reason: string): Promise<never> {
  if (child && process.send) {
    const message: CannotStartMessage = { type: 'cannot start', reason };
    process.send(message, undefined, {}, () => process.exit(1));
    return new Promise<never>(() => {});
  }
  process.stderr.write(`license-service: cannot start: ${reason}\n`);
  process.exit(1);
}

void main();
