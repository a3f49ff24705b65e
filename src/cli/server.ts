import { ConfigError, loadConfig } from '../config.js';
import { createLogger, guardProcess, scrub } from '../log.js';
import { startService, STOP_FLUSH_MS } from '../service.js';

// npm start: the HTTP server and the usage worker in one process.
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
  const log = createLogger(config.logLevel);
  guardProcess(log);
  if (!config.tls) log.warn('serving plain HTTP (ALLOW_HTTP=1): put a TLS-terminating proxy in front');
  const service = await startService(config, log).catch((err: Error) => {
    process.stderr.write(`license-service: cannot start: ${scrub(err.message)}\n`);
    process.exit(1);
  });
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
}

void main();
