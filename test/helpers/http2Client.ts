import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { rawExchange, rawRequest, type RawAnswer } from './rawHttp.js';

// HTTP/2 as browsers speak it to the front (TLS, ALPN h2), from a source address of the
// test's choosing, the answer in the shape rawExchange gives HTTP/1.x answers: a test may
// then ask the same of both protocols.

export interface Http2Request {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** the client's source address (any 127.x.y.z on Linux loopback) */
  from?: string;
}

/** One request on a connection of its own. */
export function http2Exchange(port: number, request: Http2Request): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const tcp = net.connect({ host: '127.0.0.1', port, localAddress: request.from });
    const socket = tls.connect({ socket: tcp, servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['h2'] });
    const session = http2.connect(`https://localhost:${port}`, { createConnection: () => socket });
    const fail = (err: Error) => { session.destroy(); reject(err); };
    session.on('error', fail);
    const headers: http2.OutgoingHttpHeaders = { ':method': request.method ?? 'GET', ':path': request.path, ...request.headers };
    if (request.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      headers['content-length'] = Buffer.byteLength(request.body);
    }
    const stream = session.request(headers);
    const answer: Record<string, string> = {};
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (got) => {
      status = Number(got[':status']);
      for (const [name, value] of Object.entries(got)) {
        if (!name.startsWith(':') && value !== undefined) answer[name] = Array.isArray(value) ? value.join(', ') : String(value);
      }
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      session.close();
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try { body = JSON.parse(text); } catch { /* not JSON */ }
      resolve({ status, version: 'HTTP/2', headers: answer, text, body });
    });
    stream.on('error', fail);
    stream.end(request.body);
  });
}

/** The protocols browsers and other clients speak to the front: its tests ask the same of both. */
export const PROTOCOLS = ['HTTP/1.1', 'HTTP/2'] as const;
export type Protocol = (typeof PROTOCOLS)[number];
/** Source addresses of the front's tests: 127.0.0.1 plays a client from outside; the others are named internal or admin in the test's geo lines. */
export const ADDRESSES = { outside: '127.0.0.1', internal: '127.0.0.2', adminNetwork: '127.0.0.6' } as const;

/** One request to the front's HTTPS port over `protocol`, answered in one shape whichever it is. */
export async function viaFront(tlsPort: number, protocol: Protocol, request: Http2Request): Promise<RawAnswer> {
  if (protocol === 'HTTP/2') return http2Exchange(tlsPort, request);
  const method = request.method ?? 'GET';
  const got = await rawExchange(tlsPort, rawRequest(method, request.path, request.body, request.headers), { tls: true, localAddress: request.from, answers: 1 });
  const answer = got.answers[0];
  if (answer === undefined) throw new Error(`no answer through the front to ${method} ${request.path}`);
  return answer;
}
