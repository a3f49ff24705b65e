import type { Redis } from 'ioredis';

type Socket = NonNullable<Redis['stream']>;

/**
 * Calls held per write. Sixteen measured best for check-quota at 64 connections: 1.08x
 * the build that wrote each call at once where eight gave 1.06x and the whole turn in one
 * write 1.00x (Redis then waits idle while the turn is read); 1.15x in the run of record
 * (bench/README.md, check-quota).
 */
const CALLS_PER_WRITE = 16;

/** Sockets whose writes are held until the end of this event-loop turn, with the calls each holds. */
const held = new Map<Socket, number>();

function release(): void {
  for (const socket of held.keys()) socket.uncork();
  held.clear();
}

/**
 * Holds a single connection's writes until CALLS_PER_WRITE calls or the end of the turn,
 * so the script calls of one turn's requests (check-quota's, get-token's: one each) leave
 * in a few writes and reach Redis in a few reads: written one by one, each call cost a
 * system call on both sides. The batch scripts do the same in SlotBatcher. A Cluster
 * client has no single socket and is left alone; a connection not yet up sends its queue
 * when it is.
 */
export function holdWritesForTurn(client: object): void {
  const socket = (client as Partial<Pick<Redis, 'stream'>>).stream;
  if (socket === undefined || !socket.writable) return;
  const calls = held.get(socket);
  if (calls === undefined) {
    if (held.size === 0) setImmediate(release);
    held.set(socket, 1);
    socket.cork();
  } else if (calls < CALLS_PER_WRITE) {
    held.set(socket, calls + 1);
  } else {
    socket.uncork();
    socket.cork();
    held.set(socket, 1);
  }
}
