// Its own module so that a primary, which only supervises, can read it without loading the
// service (src/cli/primary.ts): a primary that imports src/service.ts spends a third of a
// second of CPU at every start on modules it never runs.

/**
 * After SIGTERM, how long the usage worker may go on writing what is queued once the last
 * request is answered; a process exits within SHUTDOWN_TIMEOUT_MS plus this and the
 * second connections take to close (src/cli/server.ts holds the hard limit).
 */
export const STOP_FLUSH_MS = 2500;
