import { pino, type Logger } from 'pino';
import { isLostTypeFetch } from './db/typeFetch.js';

// JSON logs on stdout. No password, password hash, token, Authorization value or admin
// token may reach a log line, on any path. Errors are the dangerous ones: ioredis errors
// carry the command's arguments (the license sync carries a password hash) and postgres
// errors the query's parameters, so an error is logged as its name, code and scrubbed
// message and stack only, never with its own fields.

/** Secrets as they would appear inside free text: argon2 hashes, JWTs, bearer values. */
const SECRET_PATTERNS: RegExp[] = [
  /\$argon2(?:id|i|d)\$[^\s"',]*/g,
  /eyJ[\w-]*\.[\w-]*\.[\w-]*/g,
  /Bearer\s+\S+/gi,
];

export function scrub(text: string): string {
  let out = text;
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, '[redacted]');
  return out;
}

interface SafeError {
  type: string;
  message: string;
  code?: string | number;
  stack?: string;
}

/** What of an error may be logged: never its arguments, parameters or command. */
export function safeError(err: unknown): SafeError | string {
  if (!(err instanceof Error)) return scrub(String(err));
  const out: SafeError = { type: err.name, message: scrub(err.message) };
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') out.code = code;
  if (err.stack) out.stack = scrub(err.stack);
  return out;
}

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'license-service' },
    serializers: { err: safeError, error: safeError },
    redact: {
      paths: ['password', 'passwordHash', 'hash', 'token', 'accessToken', 'signToken', 'authorization', '*.authorization',
        'adminToken', 'adminTokens', 'jwtSecret', 'jwtKeys', 'secret'],
      remove: true,
    },
  });
}

/**
 * Node's own report of an unhandled failure prints the error with all its fields (an
 * ioredis error's command arguments among them): log it the safe way instead.
 */
export function guardProcess(log: Logger): void {
  process.on('unhandledRejection', (err) => {
    if (isLostTypeFetch(err)) log.warn({ err }, 'Postgres: a connection was lost while it was being set up; its queries fail and are retried');
    else log.error({ err }, 'unhandled rejection');
  });
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception');
    process.exit(1);
  });
}

