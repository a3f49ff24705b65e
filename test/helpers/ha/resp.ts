import net from 'node:net';

// One Redis command over a fresh connection, with a deadline: what the HA helpers use to
// look at nodes that may be dead, paused (SIGSTOP: a connection is accepted by the kernel
// and nothing ever answers) or cut off. redis-cli exits 0 on an error reply and waits for
// ever on a paused server; this rejects on both, naming the node and the command.

export type Reply = string | number | null | Reply[];

/** An error reply of Redis (e.g. NOAUTH, WRONGPASS, CLUSTERDOWN, READONLY). */
export class ReplyError extends Error {}

export interface Address {
  host: string;
  port: number;
}

export interface CallOptions {
  /** AUTH with this password first (the default user's) */
  password?: string | undefined;
  /** give up after this long (default 2000 ms) */
  timeoutMs?: number;
  /** commands sent first on the same connection, e.g. [['READONLY']] to read a Cluster replica */
  before?: (string | number)[][];
}

/** Parses one reply at `at`: [value, next offset], or null when the buffer ends first. */
function parse(buf: Buffer, at: number): [Reply | ReplyError, number] | null {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[at] as number);
  const line = buf.toString('utf8', at + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+':
      return [line, next];
    case '-':
      return [new ReplyError(line), next];
    case ':':
      return [Number(line), next];
    case '$': {
      const n = Number(line);
      if (n < 0) return [null, next];
      if (buf.length < next + n + 2) return null;
      return [buf.toString('utf8', next, next + n), next + n + 2];
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return [null, next];
      const items: Reply[] = [];
      let offset = next;
      for (let i = 0; i < n; i++) {
        const item = parse(buf, offset);
        if (!item) return null;
        if (item[0] instanceof ReplyError) return [item[0], item[1]];
        items.push(item[0]);
        offset = item[1];
      }
      return [items, offset];
    }
    default:
      throw new Error(`unexpected RESP type ${JSON.stringify(type)}`);
  }
}

function encode(args: (string | number)[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('')}`;
}

/** Sends one command (after AUTH when a password is given, and `before`) and resolves with its reply; rejects on an error reply, a closed connection or the deadline. */
export function call(to: Address, args: (string | number)[], options: CallOptions = {}): Promise<Reply> {
  const { password, timeoutMs = 2000, before = [] } = options;
  const what = `${args.slice(0, 3).join(' ')} on ${to.host}:${to.port}`;
  return new Promise((resolve, reject) => {
    const socket = net.connect(to.port, to.host);
    const first = [...(password === undefined ? [] : [['AUTH', password]]), ...before];
    const wanted = first.length + 1;
    const replies: (Reply | ReplyError)[] = [];
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = (err: Error | null, value?: Reply) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value as Reply);
    };
    const timer = setTimeout(() => finish(new Error(`no answer to ${what} within ${timeoutMs} ms`)), timeoutMs);
    socket.on('error', (err) => finish(new Error(`${what}: ${err.message}`)));
    socket.on('close', () => finish(new Error(`${what}: connection closed before the reply`)));
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        const parsed = parse(buf, 0);
        if (!parsed) return;
        replies.push(parsed[0]);
        buf = buf.subarray(parsed[1]);
        if (replies.length < wanted) continue;
        const errored = replies.find((r): r is ReplyError => r instanceof ReplyError);
        if (errored) finish(new ReplyError(`${what}: ${errored.message}`));
        else finish(null, replies[wanted - 1] as Reply);
        return;
      }
    });
    socket.write([...first, args].map(encode).join(''));
  });
}

/** INFO's "name:value" lines as a record (sections' headers skipped). */
export function parseInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) out[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return out;
}
