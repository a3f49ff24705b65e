import http from 'node:http';

// The one fetch wrapper of the tests: one HTTP request with a deadline that never throws,
// and what a client saw (an answer, no answer, a timeout) as an Outcome; timedCall also keeps
// the time it took and its Retry-After. Harness.request is call() for a test that expects an
// answer; the fault tests count every outcome.

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
    const res = await fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : typeof body === 'string' || body instanceof Uint8Array ? body as BodyInit : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    retryAfter = res.headers.get('retry-after');
    const text = await res.text();
    outcome = { kind: 'answer', status: res.status, headers: res.headers, body: parseJson(text), text };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    outcome = e.name === 'TimeoutError' || e.name === 'AbortError'
      ? { kind: 'timeout' }
      : { kind: 'noAnswer', error: e.cause?.code ?? e.cause?.message ?? e.message };
  }
  return { outcome, ms: Math.round(performance.now() - started), retryAfter, sentAt };
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
