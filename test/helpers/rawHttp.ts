import net from 'node:net';
import tls from 'node:tls';

// HTTP/1.x written byte for byte, as a client that no library would let us be sends it
// (HTTP/1.0, two Content-Length lines, odd Transfer-Encodings, pipelined requests), and
// every answer on the connection parsed in order.

export interface RawAnswer {
  status: number;
  /** the status line's protocol, e.g. HTTP/1.1 */
  version: string;
  /** header names in lower case; a repeated header's values joined with ", " */
  headers: Record<string, string>;
  text: string;
  body: unknown;
}

export interface RawExchange {
  answers: RawAnswer[];
  /** the server closed the connection (false: the exchange ended by the client's timeout) */
  closed: boolean;
  /** bytes after the last whole answer */
  rest: string;
}

export interface RawOptions {
  tls?: boolean;
  /** the client's source address (any 127.x.y.z on Linux loopback) */
  localAddress?: string;
  /** stop once this many answers have arrived (default: wait for the close) */
  answers?: number;
  /** give up after this long (default 5 s) */
  timeoutMs?: number;
}

function parseBody(text: string): unknown {
  try { return JSON.parse(text); } catch { return null; }
}

/** A chunked body starting at `at`: its text and where it ends, or null while incomplete. */
function chunkedBody(buf: Buffer, at: number): { text: string; end: number } | null {
  const parts: Buffer[] = [];
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error(`bad chunk size line: ${buf.subarray(at, eol).toString('latin1')}`);
    if (buf.length < eol + 2 + size + 2) return null;
    if (size === 0) return { text: Buffer.concat(parts).toString('utf8'), end: eol + 4 };
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** The whole answers at the start of `buf` (framed by Content-Length or chunked), and what remains. */
export function parseAnswers(buf: Buffer): { answers: RawAnswer[]; rest: Buffer } {
  const answers: RawAnswer[] = [];
  let at = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const [statusLine = '', ...lines] = buf.subarray(at, end).toString('latin1').split('\r\n');
    const m = /^(HTTP\/\d\.\d) (\d{3})/.exec(statusLine);
    if (!m) break;
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    let body: { text: string; end: number } | null;
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = chunkedBody(buf, end + 4);
    else {
      const length = Number(headers['content-length'] ?? 0);
      body = buf.length < end + 4 + length ? null : { text: buf.subarray(end + 4, end + 4 + length).toString('utf8'), end: end + 4 + length };
    }
    if (body === null) break;
    answers.push({ version: m[1] as string, status: Number(m[2]), headers, text: body.text, body: parseBody(body.text) });
    at = body.end;
  }
  return { answers, rest: buf.subarray(at) };
}

/** Writes `request` (the whole of it, at once) and collects the answers. */
export function rawExchange(port: number, request: string | Buffer, options: RawOptions = {}): Promise<RawExchange> {
  const { timeoutMs = 5000 } = options;
  return new Promise((resolve, reject) => {
    const tcp = net.connect({ host: '127.0.0.1', port, localAddress: options.localAddress });
    const socket: net.Socket = options.tls ? tls.connect({ socket: tcp, servername: 'localhost', rejectUnauthorized: false }) : tcp;
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const { answers, rest } = parseAnswers(received);
      resolve({ answers, closed, rest: rest.toString('latin1') });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.once(options.tls ? 'secureConnect' : 'connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (options.answers !== undefined && parseAnswers(received).answers.length >= options.answers) finish(false);
    });
    socket.on('error', (err) => { if (received.length === 0 && !done) { done = true; clearTimeout(timer); reject(err); } else finish(true); });
    socket.on('close', () => finish(true));
  });
}

/** A request of the given method, path and headers, with a JSON body and its Content-Length, HTTP/1.1 unless `version` says otherwise. */
export function rawRequest(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, version = 'HTTP/1.1'): string {
  const payload = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  const lines = [`${method} ${path} ${version}`, 'Host: localhost'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(payload)}`);
  return `${lines.join('\r\n')}\r\n\r\n${payload}`;
}
