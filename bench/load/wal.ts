import postgres from 'postgres';

// WAL bytes per redemption beside Postgres's CPU: the server's WAL insert position, read
// before a run and after its drain. The whole server's WAL: the bench's schema is the only
// one written to while it runs.
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
let sql: ReturnType<typeof postgres> | null = null;

/** Bytes of WAL the server has written since it began (its insert position). */
export async function walPosition(): Promise<number> {
  // one connection, closed when idle so the driver's exit is not held
  sql ??= postgres(DATABASE_URL, { max: 1, idle_timeout: 1, onnotice: () => {} });
  const [row] = await sql`select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8 as at`;
  return Number(row?.at ?? 0);
}
