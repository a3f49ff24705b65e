import http from 'node:http';
import https from 'node:https';

// The one HTTP client of the tests: one request with a deadline that never throws, and what a
// client saw (an answer, no answer, a timeout) as an Outcome; timedCall also keeps the time
// it took and its Retry-After. Harness.request is call() for a test that expects an answer;
// the fault tests count every outcome.
//
// Every request goes on a connection of its own (Connection: close), as requests from many
// users do: the service runs several processes on one port (`npm start`, WORKERS), the kernel
// gives each connection to one of them, and a keep-alive connection would send every request
// of a test to the same process. freshFetch is the same as a fetch, for the client SDK.

/** An answer: status, headers, the body as text and parsed (null when it is not JSON). */
export interface Answer<T = any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** What a client saw: an answer, no answer at all (refused, reset), or nothing within the deadline. */
export type Outcome =
  | ({ kind: 'answer' } & Answer)
  | { kind: 'noAnswer'; error: string }
  | { kind: 'timeout' };

/** The text, parsed as JSON; null when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** One request; never throws. A string or byte body is sent as it is, any other as JSON. */
export async function call(
  base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 5000,
): Promise<Outcome> {
  return (await timedCall(base, method, path, body, headers, timeoutMs)).outcome;
}

/** The outcome as one word for counting: the status, 'noAnswer' or 'timeout'. */
export function outcomeLabel(o: Outcome): string {
  return o.kind === 'answer' ? String(o.status) : o.kind;
}

// ---- timed requests ------------------------------------------------------------------------

export interface Timed {
  outcome: Outcome;
  /** from sending to the whole body read */
  ms: number;
  retryAfter: string | null;
  /** Date.now() when sent */
  sentAt: number;
}

/** One request, timed, with its Retry-After header; never throws. A string or byte body is sent as it is, any other as JSON. */
export async function timedCall(
  base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 5000,
): Promise<Timed> {
  const sentAt = Date.now();
  const started = performance.now();
  let retryAfter: string | null = null;
  let outcome: Outcome;
  try {
    const res = await exchange(new URL(base + path), {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    retryAfter = res.headers.get('retry-after');
    const text = res.body.toString('utf8');
    outcome = { kind: 'answer', status: res.status, headers: res.headers, body: parseJson(text), text };
  } catch (err) {
    const e = err as Error & { code?: string };
    outcome = e.name === 'TimeoutError' || e.name === 'AbortError'
      ? { kind: 'timeout' }
      : { kind: 'noAnswer', error: e.code ?? e.message };
  }
  return { outcome, ms: Math.round(performance.now() - started), retryAfter, sentAt };
}

interface Exchange {
  status: number;
  headers: Headers;
  body: Buffer;
}

/**
 * One request on a new connection (no agent: Node sends Connection: close), the whole answer
 * read. Rejects with the signal's reason when it aborts, with the socket's error otherwise.
 */
function exchange(
  url: URL, init: { method: string; headers: Record<string, string>; body?: string | Uint8Array; signal?: AbortSignal },
): Promise<Exchange> {
  const { signal } = init;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const body = init.body === undefined ? undefined : typeof init.body === 'string' ? Buffer.from(init.body) : init.body;
    const headers = body === undefined ? init.headers : { 'content-length': String(body.length), ...init.headers };
    const req = (url.protocol === 'https:' ? https : http).request(url, { method: init.method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', fail);
      res.once('end', () => {
        signal?.removeEventListener('abort', onAbort);
        try {
          const answered = new Headers();
          for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) answered.append(res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string);
          resolve({ status: res.statusCode ?? 0, headers: answered, body: Buffer.concat(chunks) });
        } catch (err) {
          reject(err as Error); // a header a fetch Headers refuses
        }
      });
    });
    function fail(err: Error): void {
      signal?.removeEventListener('abort', onAbort);
      reject(signal?.aborted ? signal.reason : err);
    }
    function onAbort(): void {
      req.destroy(signal?.reason as Error);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', fail); // on, not once: a second error may follow (a write after the server closed), and an unheard one ends the test process
    req.end(body);
  });
}

/** Answers that carry no body (a Response refuses one). */
const NO_BODY = new Set([204, 205, 304]);

/**
 * A fetch (for the client SDK and the tests' own fetches) over a new connection per request,
 * like every request of these helpers. Errors as fetch's: the signal's reason when aborted,
 * else a TypeError whose cause is the socket's error.
 */
export async function freshFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const body = init.body ?? undefined;
  if (body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)) throw new TypeError('freshFetch: a string or byte body only');
  let res: Exchange;
  try {
    res = await exchange(url, {
      method: init.method ?? 'GET',
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      body,
      signal: init.signal ?? undefined,
    });
  } catch (err) {
    if (init.signal?.aborted) throw err;
    throw new TypeError('fetch failed', { cause: err });
  }
  return new Response(NO_BODY.has(res.status) || init.method === 'HEAD' ? null : new Uint8Array(res.body), { status: res.status, headers: res.headers });
}

/** The answer of an outcome; throws (naming the request) when there was none. */
export function answerOf(o: Outcome, what: string): Answer {
  if (o.kind === 'answer') return o;
  throw new Error(`${what}: ${o.kind === 'timeout' ? 'no answer in time' : `no answer (${o.error})`}`);
}

// ---- a client of one server ------------------------------------------------------------------

/** What the helpers that talk to a service need of it: one request, answered (Harness is one). */
export interface Client {
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
}

/** A Client of the server at `base` (a URL, or a function giving the URL of each request); throws when a request gets no answer. */
export function clientOf(base: string | (() => string), timeoutMs = 60_000): Client {
  return {
    async request(method, path, body, headers = {}) {
      const url = typeof base === 'string' ? base : base();
      return answerOf(await call(url, method, path, body, headers, timeoutMs), `${method} ${path}`);
    },
  };
}

// ---- a connection per request ------------------------------------------------------------------

/**
 * A Client that opens a connection of its own for every request (node:http with agent:
 * false, "Connection: close"): with several server processes on one port (WORKERS) the
 * kernel hands each connection to one of them, so requests reach every process, where
 * fetch's kept-alive connections would stick to one. A string or byte body is sent as it
 * is, any other as JSON; throws when a request gets no answer.
 */
export function freshConnectionClient(base: string, timeoutMs = 60_000): Client {
  const url = new URL(base);
  return {
    request(method, path, body, headers = {}) {
      const payload = body === undefined ? null
        : Buffer.from(typeof body === 'string' ? body : body instanceof Uint8Array ? body : JSON.stringify(body));
      return new Promise<Answer>((resolve, reject) => {
        const req = http.request({
          host: url.hostname, port: url.port, method, path, agent: false,
          headers: { 'content-type': 'application/json', ...(payload ? { 'content-length': payload.length } : {}), ...headers },
        }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const out = new Headers();
            for (const [name, value] of Object.entries(res.headers)) {
              if (value !== undefined) out.set(name, Array.isArray(value) ? value.join(', ') : value);
            }
            resolve({ status: res.statusCode ?? 0, headers: out, body: parseJson(text), text });
          });
          res.on('error', reject);
        });
        req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
        req.on('error', (err) => reject(new Error(`${method} ${path}: no answer (${err.message})`)));
        req.end(payload ?? undefined);
      });
    },
  };
}
