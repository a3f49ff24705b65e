import http from 'node:http';
import net from 'node:net';
import { bodyBytes, type Req, type Resolver, resolveTpl } from './fuzzRequests.js';
import { parseJson } from './http.js';

// Fuzzing (test/system/fuzz.test.ts), part 3: a raw HTTP client (paths are sent as generated:
// no normalisation of '..', no re-encoding).

// ---- HTTP -----------------------------------------------------------------------------------

export interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | null;
}

export interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: unknown;
}

export { parseJson } from './http.js';

/** A raw HTTP client: the path goes out exactly as given. */
export class RawClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

  constructor(private readonly port: number) {}

  send(req: Sent, attempt = 0): Promise<Got> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { ...req.headers };
      if (req.body !== null) headers['content-length'] = req.body.length;
      const r = http.request({ host: '127.0.0.1', port: this.port, method: req.method, path: req.path, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parseJson(text) });
        });
        res.on('error', reject);
      });
      r.setTimeout(10_000, () => r.destroy(new Error('no answer within 10 s')));
      r.on('error', (err: NodeJS.ErrnoException) => {
        // a kept-alive connection the server closed meanwhile (after a 413): once more, on a new one
        if (r.reusedSocket && attempt === 0 && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
          resolve(this.send(req, 1));
        } else {
          reject(new Error(`${req.method} ${JSON.stringify(req.path)}: ${err.code ?? ''} ${err.message} (no HTTP answer)`));
        }
      });
      r.end(req.body ?? undefined);
    });
  }

  /**
   * A HEAD request on a connection of its own, read to the end: an answer to HEAD must end
   * with its header block (RFC 9110 9.3.2), so any byte after it breaks the framing of the
   * next answer on a kept-alive connection; those bytes are reported as headBodyBytes.
   */
  head(req: Sent): Promise<Got & { headBodyBytes: number }> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.port, '127.0.0.1');
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => socket.destroy(new Error('no answer to HEAD within 10 s')), 10_000);
      socket.on('connect', () => {
        const lines = [`HEAD ${req.path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
        for (const [name, value] of Object.entries(req.headers)) lines.push(`${name}: ${value}`);
        if (req.body !== null) lines.push(`Content-Length: ${req.body.length}`);
        socket.write(Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'));
        if (req.body !== null) socket.write(req.body);
      });
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`HEAD ${JSON.stringify(req.path)}: ${err.message} (no HTTP answer)`));
      });
      socket.on('end', () => {
        clearTimeout(timer);
        socket.destroy();
        const all = Buffer.concat(chunks);
        const end = all.indexOf('\r\n\r\n');
        if (end < 0) {
          reject(new Error(`HEAD ${JSON.stringify(req.path)}: the connection ended without an answer (${JSON.stringify(all.toString('latin1').slice(0, 200))})`));
          return;
        }
        const [statusLine, ...headerLines] = all.subarray(0, end).toString('latin1').split('\r\n');
        const headers: http.IncomingHttpHeaders = {};
        for (const line of headerLines) {
          const colon = line.indexOf(':');
          if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const rest = all.subarray(end + 4);
        const text = rest.toString('utf8');
        resolve({ status: Number(statusLine?.split(' ')[1] ?? 0), headers, text, body: parseJson(text), headBodyBytes: rest.length });
      });
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * A header value as a client can send it: control characters (but tab) dropped, characters
 * above U+00FF as their UTF-8 bytes (one Latin-1 character each), which is what goes out.
 */
export function headerSafe(value: string): string {
  // eslint-disable-next-line no-control-regex -- dropping control characters is the point
  return value.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, '').replace(/[^\t\x20-\x7e\x80-\xff]/gu, (c) => Buffer.from(c).toString('latin1'));
}

export async function materialise(r: Resolver, req: Req): Promise<Sent> {
  const headers: Record<string, string> = {};
  for (const [name, tpl] of Object.entries(req.headers)) {
    if (tpl !== undefined) headers[name] = headerSafe(await resolveTpl(r, tpl));
  }
  return { method: req.method, path: await resolveTpl(r, req.path), headers, body: await bodyBytes(r, req.body) };
}
