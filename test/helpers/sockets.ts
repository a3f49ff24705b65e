import { readdir, readFile, readlink } from 'node:fs/promises';
import net from 'node:net';
import { waitFor } from './wait.js';

// Many server processes on one port (WORKERS=N): which process the kernel gave a connection
// to, read from /proc (the server's side of the connection is a socket in that process's
// file table), so a test shows that requests reached every process without the service
// having to say who answered.

/** Which of `pids` holds the server's side of each established loopback connection to `port`, keyed by the client's port. */
export async function connectionOwners(port: number, pids: number[]): Promise<Map<number, number>> {
  const byInode = new Map<string, number>();
  for (const pid of pids) {
    for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
      const inode = /^socket:\[(\d+)\]$/.exec(await readlink(`/proc/${pid}/fd/${fd}`).catch(() => ''))?.[1];
      if (inode !== undefined) byInode.set(inode, pid);
    }
  }
  const owners = new Map<number, number>();
  for (const line of (await readFile('/proc/net/tcp', 'utf8')).split('\n').slice(1)) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || f[3] !== '01') continue; // 01: ESTABLISHED
    const local = parseInt(f[1]?.split(':')[1] ?? '', 16);
    const remote = parseInt(f[2]?.split(':')[1] ?? '', 16);
    const pid = byInode.get(f[9] ?? '');
    if (local === port && pid !== undefined) owners.set(remote, pid);
  }
  return owners;
}

/** The client ports of the established loopback connections to `port` (the server's side, from /proc/net/tcp). */
export async function establishedTo(port: number): Promise<Set<number>> {
  const clients = new Set<number>();
  for (const line of (await readFile('/proc/net/tcp', 'utf8')).split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || f[3] !== '01') continue; // 01: ESTABLISHED
    if (parseInt(f[1]?.split(':')[1] ?? '', 16) === port) clients.add(parseInt(f[2]?.split(':')[1] ?? '', 16));
  }
  return clients;
}

/** The parent pid of a process (/proc/<pid>/stat, the field after the state). */
export async function parentOf(pid: number): Promise<number | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

export interface OneShotAnswer {
  status: number;
  /** the answer's header fields, names in lower case */
  headers: Record<string, string>;
  body: string;
  /** the server process that held the connection */
  pid: number;
}

/** One request of oneRequestPerConnection: headers are added to its own; localAddress binds the client's side (127.0.0.2: another client). */
export interface OneShotRequest {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  localAddress?: string;
}

/** The header fields of an HTTP/1.1 answer's head, names in lower case. */
function headersOf(head: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) out[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return out;
}

/**
 * Opens `requests.length` connections to `port`, waits until the kernel has handed each to
 * one of `pids` (and notes which), makes sure every process holds one when there are as many
 * requests as processes (see spread), then sends one request on each (Connection: close) and
 * resolves with every answer; a connection that closes without one rejects. afterSend runs
 * once every request is written (e.g. a signal while they are in flight).
 */
export async function oneRequestPerConnection(
  port: number, pids: number[], requests: OneShotRequest[], afterSend?: () => void,
): Promise<OneShotAnswer[]> {
  const sockets = await Promise.all(requests.map(({ localAddress }) => connect(port, localAddress)));
  const opened = new Set(sockets);
  try {
    const owner = await acceptedBy(port, pids, sockets);
    await spread(port, pids, requests, sockets, owner, opened);
    const answers = sockets.map((socket, i) => exchange(socket, owner.get(socket) as number, requests[i] as OneShotRequest));
    afterSend?.();
    return await Promise.all(answers);
  } finally {
    for (const s of opened) s.destroy();
  }
}

function connect(port: number, localAddress?: string): Promise<net.Socket> {
  return new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Which of `pids` accepted each socket, once all have been (the pid read now: a closed socket has no local port). */
async function acceptedBy(port: number, pids: number[], sockets: net.Socket[]): Promise<Map<net.Socket, number>> {
  let owners = new Map<number, number>();
  await waitFor('every connection accepted by a server process', async () => {
    owners = await connectionOwners(port, pids);
    return sockets.every((s) => owners.has(s.localPort as number));
  }, 10_000);
  return new Map(sockets.map((s) => [s, owners.get(s.localPort as number) as number]));
}

/**
 * The kernel hashes each connection to one process, so n connections all land on one of two
 * processes once in 2^(n-1) runs: a test that shows requests reaching every process would
 * fail that often. So, with at least as many requests as processes, a connection of a
 * process holding several is swapped for a new one a missing process accepted. The one
 * swapped out is closed before any request is sent on it: it is counted nowhere.
 */
async function spread(
  port: number, pids: number[], requests: OneShotRequest[], sockets: net.Socket[], owner: Map<net.Socket, number>, opened: Set<net.Socket>,
): Promise<void> {
  if (requests.length < pids.length) return;
  for (let round = 0; round < 50; round++) {
    const holders = sockets.map((s) => owner.get(s) as number);
    const missing = new Set(pids.filter((p) => !holders.includes(p)));
    if (missing.size === 0) return;
    // a connection of a process that holds another one too
    const slot = holders.findIndex((p, i) => holders.indexOf(p) !== i);
    const extra = await Promise.all(Array.from({ length: 4 }, () => connect(port, requests[slot]?.localAddress)));
    for (const s of extra) opened.add(s);
    const owners = await acceptedBy(port, pids, extra);
    const swap = extra.find((s) => missing.has(owners.get(s) as number));
    for (const s of extra) if (s !== swap) s.destroy();
    if (swap === undefined) continue;
    sockets[slot]?.destroy();
    sockets[slot] = swap;
    owner.set(swap, owners.get(swap) as number);
  }
}

/**
 * One request on a connection the kernel gave to process `pid` (Connection: close): opens
 * connections a few at a time until one is held by `pid` and sends the request on it,
 * closing the others unused. For a test that must reach one process while another, hung,
 * accepts nothing (the connections handed to that one never show in /proc).
 */
export async function requestVia(port: number, pid: number, request: OneShotRequest, rounds = 20): Promise<OneShotAnswer> {
  for (let round = 0; round < rounds; round++) {
    const sockets = await Promise.all(Array.from({ length: 4 }, () => connect(port)));
    let chosen: net.Socket | undefined;
    await waitFor(`a connection held by ${pid}`, async () => {
      const owners = await connectionOwners(port, [pid]);
      chosen = sockets.find((s) => owners.get(s.localPort as number) === pid);
      return chosen !== undefined;
    }, 1_000).catch(() => {});
    for (const s of sockets) if (s !== chosen) s.destroy();
    if (!chosen) continue;
    return await exchange(chosen, pid, request);
  }
  throw new Error(`no connection to ${port} reached process ${pid} in ${rounds} rounds`);
}

/** Sends one request (Connection: close) on a connected socket and reads the answer until the server closes it. */
function exchange(socket: net.Socket, pid: number, { method, path, body, headers = {} }: OneShotRequest): Promise<OneShotAnswer> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  const chunks: Buffer[] = [];
  return new Promise<OneShotAnswer>((resolve, reject) => {
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.once('error', reject);
    socket.once('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) reject(new Error(`connection closed without an answer: ${JSON.stringify(text)}`));
      else resolve({ status: Number(text.split(' ')[1]), headers: headersOf(text.slice(0, split)), body: text.slice(split + 4), pid });
    });
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n`
      + `${extra}Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
  });
}
