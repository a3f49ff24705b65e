// One HTTP request with a deadline that never throws: what a client saw (an answer, no
// answer, a timeout), as an Outcome; timedCall also keeps the time it took and its Retry-After.

// ---- HTTP with a deadline ------------------------------------------------------------------

/** What a client saw: an answer, no answer at all (refused, reset), or nothing within the deadline. */
export type Outcome =
  | { kind: 'answer'; status: number; body: any; text: string } // eslint-disable-line @typescript-eslint/no-explicit-any
  | { kind: 'noAnswer'; error: string }
  | { kind: 'timeout' };

/** One request; never throws. */
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

/** One request, timed, with its Retry-After header; never throws. */
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
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    retryAfter = res.headers.get('retry-after');
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    outcome = { kind: 'answer', status: res.status, body: parsed, text };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    outcome = e.name === 'TimeoutError' || e.name === 'AbortError'
      ? { kind: 'timeout' }
      : { kind: 'noAnswer', error: e.cause?.code ?? e.cause?.message ?? e.message };
  }
  return { outcome, ms: Math.round(performance.now() - started), retryAfter, sentAt };
}
