import type { Sql } from '../../src/db/pg.js';

// The one wait helper: a pause, and polling until a condition holds (with a deadline). Tests
// wait for a state with these, never for a guessed time when a state can be polled.

/** Resolves after ms. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface PollOptions {
  /** give up after this long (default 15 s) */
  timeoutMs?: number;
  /** pause between two checks (default 25 ms) */
  intervalMs?: number;
}

/** Checks until check() returns true: resolves true then, or false once timeoutMs has passed. */
export async function until(check: () => Promise<boolean> | boolean, options: PollOptions = {}): Promise<boolean> {
  const { timeoutMs = 15_000, intervalMs = 25 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(intervalMs);
  }
}

/**
 * Checks until check() returns true; throws "timed out waiting for: <label>" after timeoutMs
 * (a label given as a function is read then, to say what was seen last).
 */
export async function waitFor(
  label: string | (() => string), check: () => Promise<boolean> | boolean, timeoutMs = 15_000, intervalMs = 25,
): Promise<void> {
  if (!(await until(check, { timeoutMs, intervalMs }))) {
    throw new Error(`timed out waiting for: ${typeof label === 'function' ? label() : label}`);
  }
}

/** Calls get() until done(value) holds, or timeoutMs has passed; resolves with the last value. */
export async function pollUntil<T>(get: () => Promise<T>, done: (value: T) => boolean, options: PollOptions = {}): Promise<T> {
  let last: T | undefined;
  await until(async () => done(last = await get()), options);
  return last as T;
}

/**
 * Waits until a statement of this database whose text holds `text` (any case) waits for a
 * lock: a test holding a row across a statement of the service (from inside its transaction
 * too). Throws when none does within
 * timeoutMs, so a race the test means to stage fails the test instead of passing unstaged.
 */
export async function waitForLockWait(sql: Sql, text: string, timeoutMs = 10_000): Promise<void> {
  await waitFor(`a statement with "${text}" waiting for a lock`, async () => {
    // a session in a transaction keeps its first view of pg_stat_activity until told to drop it
    await sql`select pg_stat_clear_snapshot()`;
    const [row] = await sql`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and strpos(lower(query), lower(${text})) > 0 and pid <> pg_backend_pid()`;
    return (row?.n as number) > 0;
  }, timeoutMs, 10);
}
