import { ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, webhookSignature } from './signature.js';
import type { ClaimedEvent } from './outbox.js';

/** What one attempt came to: delivered (a 2xx), or why not. */
export type Attempt = { ok: true; status: number } | { ok: false; status: number | null; error: string };

/** The body a receiver gets: the same bytes on every attempt of one event. */
export function webhookBody(event: Pick<ClaimedEvent, 'id' | 'type' | 'createdAt' | 'payload'>): string {
  return JSON.stringify({ id: event.id, type: event.type, createdAt: event.createdAt.toISOString(), data: event.payload });
}

/**
 * POSTs one event to the license's URL, signed, within timeoutMs (connecting and the
 * response's status line and headers). Redirects are not followed (a 3xx is a failed
 * attempt) and the response body is never read. `stop` aborts it (the worker is stopping).
 */
export async function sendWebhook(event: ClaimedEvent & { url: string; secret: string }, timeoutMs: number, stop: AbortSignal): Promise<Attempt> {
  const body = webhookBody(event);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const timeout = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(event.url, {
      method: 'POST',
      redirect: 'manual',
      signal: AbortSignal.any([timeout, stop]),
      headers: {
        'content-type': 'application/json',
        'user-agent': 'license-service-webhooks/1',
        [ID_HEADER]: event.id,
        [TIMESTAMP_HEADER]: timestamp,
        [SIGNATURE_HEADER]: webhookSignature(event.secret, timestamp, body),
      },
      body,
    });
  } catch (err) {
    if (timeout.aborted) return { ok: false, status: null, error: `no answer within ${timeoutMs} ms` };
    if (stop.aborted) return { ok: false, status: null, error: 'worker stopping' };
    return { ok: false, status: null, error: describe(err) };
  }
  await res.body?.cancel().catch(() => {});
  if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
  const why = res.status >= 300 && res.status < 400 ? ' (redirects are not followed)' : '';
  return { ok: false, status: res.status, error: `HTTP ${res.status}${why}` };
}

/** A network error in one line: fetch puts the reason (ECONNREFUSED, a TLS error) in its cause. */
function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message ?? String(err);
}
