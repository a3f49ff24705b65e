import { pino, type Logger } from 'pino';

/** JSON logs on stdout. Tokens, passwords and Authorization headers are never logged. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'license-service' },
    redact: { paths: ['password', 'token', 'accessToken', 'signToken', 'authorization', '*.authorization'], remove: true },
  });
}
