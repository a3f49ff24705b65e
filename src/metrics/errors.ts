import postgres from 'postgres';

// Which dependency an error came from, read off the error itself: the request path and the
// worker let Redis's and Postgres's errors travel up unchanged to the places that answer
// 503 (src/http/server.ts) or retry (src/usage/worker.ts, src/usage/batchWriter.ts), and
// there they are counted. ioredis fails a command with a ReplyError (Redis refused it), a
// timeout (REDIS_COMMAND_TIMEOUT_MS), a closed or unwritable connection, or, on a Cluster, a plain
// Error once its redirections run out (a slot being moved answers TRYAGAIN until it has
// moved: test/system/cluster.reshard.test.ts); postgres fails a query
// with a PostgresError (the server refused it), one of its own connection codes, or the
// socket's error (ECONNREFUSED...), which ioredis never passes to a command.

export type Dependency = 'redis' | 'postgres';

const REDIS_ERROR_NAMES = new Set(['ReplyError', 'MaxRetriesPerRequestError', 'ClusterAllFailedError']);
const REDIS_MESSAGES = [
  'Command timed out', 'Connection is closed', "Stream isn't writeable", 'Failed to refresh slots cache', 'Too many Cluster redirections',
];
const POSTGRES_CODES = new Set([
  'CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'CONNECT_TIMEOUT', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT',
  'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
]);

export function dependencyOf(err: unknown): Dependency | null {
  if (err instanceof postgres.PostgresError) return 'postgres';
  if (!(err instanceof Error)) return null;
  if (REDIS_ERROR_NAMES.has(err.name) || REDIS_MESSAGES.some((m) => err.message.startsWith(m))) return 'redis';
  const { code } = err as { code?: unknown };
  return typeof code === 'string' && POSTGRES_CODES.has(code) ? 'postgres' : null;
}
