import http from 'node:http';
import https from 'node:https';
import { guardedLookup, REFUSED, RefusedTarget, refusalOf, systemResolve, type Resolve, type TargetPolicy } from './guard.js';
import { ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, webhookSignature } from './signature.js';
import type { ClaimedEvent } from './outbox.js';

/**
 * What one attempt came to: delivered (a 2xx), or why not. permanent: the target is refused
 * by the policy (src/webhooks/guard.ts), so retrying cannot help: the event fails for good.
 */
export type Attempt = { ok: true; status: number } | { ok: false; status: number | null; error: string; permanent?: true };

/** Where a delivery may go, and (for tests) how its host name is resolved. */
export interface Destination {
  policy: TargetPolicy;
  resolve?: Resolve;
}

/** The body a receiver gets: the same bytes on every attempt of one event. */
export function webhookBody(event: Pick<ClaimedEvent, 'id' | 'type' | 'createdAt' | 'payload'>): string {
  return JSON.stringify({ id: event.id, type: event.type, createdAt: event.createdAt.toISOString(), data: event.payload });
}

/**
 * POSTs one event to the license's URL, signed, within timeoutMs (resolving, connecting and
 * the response's status line and headers). The target is checked first (scheme, an address
 * as the host) and again on the addresses the host name resolves to now, in the look-up the
 * connection itself uses; a refused one never gets a connection, and its attempt records
 * fixed words that tell nothing of what is there. Redirects are not followed (a 3xx is a
 * failed attempt) and the response body is never read. `stop` aborts it (the worker is stopping).
 */
export async function sendWebhook(
  event: ClaimedEvent & { url: string; secret: string }, timeoutMs: number, stop: AbortSignal, destination: Destination,
): Promise<Attempt> {
  let url: URL;
  try {
    url = new URL(event.url);
  } catch {
    return { ok: false, status: null, error: 'not a URL', permanent: true }; // never stored so (the admin API checks it): no retry mends it
  }
  const refusal = refusalOf(url, destination.policy);
  if (refusal !== null) return refused(refusal);
  const body = webhookBody(event);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const timeout = AbortSignal.timeout(timeoutMs);
  let status: number;
  try {
    status = await post(url, body, {
      'content-type': 'application/json',
      'user-agent': 'license-service-webhooks/1',
      [ID_HEADER]: event.id,
      [TIMESTAMP_HEADER]: timestamp,
      [SIGNATURE_HEADER]: webhookSignature(event.secret, timestamp, body),
    }, AbortSignal.any([timeout, stop]), guardedLookup(destination.policy, destination.resolve ?? systemResolve));
  } catch (err) {
    if (err instanceof RefusedTarget) return refused(err.refusal);
    if (timeout.aborted) return { ok: false, status: null, error: `no answer within ${timeoutMs} ms` };
    if (stop.aborted) return { ok: false, status: null, error: 'worker stopping' };
    return { ok: false, status: null, error: describe(err) };
  }
  if (status >= 200 && status < 300) return { ok: true, status };
  const why = status >= 300 && status < 400 ? ' (redirects are not followed)' : '';
  return { ok: false, status, error: `HTTP ${status}${why}` };
}

function refused(refusal: keyof typeof REFUSED): Attempt {
  return { ok: false, status: null, error: REFUSED[refusal], permanent: true };
}

/**
 * One POST on a connection of its own (no pool: each attempt resolves and checks its target
 * afresh), settled by the response's status; the connection is closed without reading the body.
 */
function post(url: URL, body: string, headers: Record<string, string>, signal: AbortSignal, lookup: ReturnType<typeof guardedLookup>): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https.request : http.request)(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      agent: false,
      lookup,
      signal,
    }, (res) => {
      res.destroy();
      resolve(res.statusCode ?? 0);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** A network error in one line: its code (ECONNREFUSED, a TLS error's) or message. */
function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ?? e.message ?? String(err);
}
