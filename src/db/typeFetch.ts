/**
 * postgres.js (3.4) asks each new connection for the array types before its first query,
 * and drops the promise of that query: a connection lost during it (reset, Postgres
 * restarting, a proxy failing over) rejects where nothing listens, as an unhandled rejection.
 * It harms nothing: the queries waiting for that connection fail on their own and their
 * callers retry them, so the process reports it as a lost connection, not as a defect of
 * ours. Recognized by the statement the driver attaches to its error.
 */
export function isLostTypeFetch(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const query = (err as { query?: unknown }).query;
  return typeof query === 'string' && isTypeFetch(query);
}

/** The driver's array-type lookup, by its text. */
export function isTypeFetch(statement: string): boolean {
  return statement.includes('pg_catalog.pg_type') && statement.includes('typarray');
}
