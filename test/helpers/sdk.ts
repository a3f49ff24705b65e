import { LicenseApiError, LicenseClient, type LicenseClientOptions, type LicenseErrorCode } from '@license-service/client';
import type { Asserts } from './shapes.js';
import { freshFetch, type Client } from './http.js';

// The tests talk to the public API through the client SDK (packages/client), imported by the
// package's name as a user would. sdkOf gives the SDK client of a test's Client: a Harness
// (it has a URL) directly over freshFetch; any other Client (clientOf with a URL chosen per
// request, a proxy's) through that Client, so its routing and deadline still apply. Either
// way every request goes on a connection of its own (./http.ts), so that consecutive calls
// can reach different processes of the service.

/** What the helpers expect: one attempt (a test sees every refusal), the harness's deadline. */
const TEST_DEFAULTS = { timeoutMs: 60_000, retry: { maxAttempts: 1 } } as const;

const clients = new WeakMap<Client, LicenseClient>();

/** A fetch that sends through a Client (path and query of the URL, method, headers, body). */
function fetchThrough(client: Client): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const body = typeof init?.body === 'string' ? init.body : undefined;
    const answer = await client.request(init?.method ?? 'GET', url.pathname + url.search, body, headers);
    return new Response(answer.text, { status: answer.status, headers: answer.headers });
  };
}

/** The SDK client of a test's Client; options (retries, a counting fetch) make a new one. */
export function sdkOf(client: Client, options: Partial<LicenseClientOptions> = {}): LicenseClient {
  const plain = Object.keys(options).length === 0;
  const known = plain ? clients.get(client) : undefined;
  if (known) return known;
  const url = (client as { url?: unknown }).url;
  const made = typeof url === 'string'
    ? new LicenseClient({ ...TEST_DEFAULTS, baseUrl: url, fetch: freshFetch, ...options })
    : new LicenseClient({ ...TEST_DEFAULTS, baseUrl: 'http://client.invalid', fetch: fetchThrough(client), ...options });
  if (plain) clients.set(client, made);
  return made;
}

/** A fetch that records each request it sends ("METHOD path"), for counting what the SDK sent; a connection per request (freshFetch). */
export function countingFetch(): { fetch: typeof fetch; sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      sent.push(`${init?.method ?? 'GET'} ${url.pathname}${url.search}`);
      return freshFetch(input, init);
    },
  };
}

/** What a promise rejected with (undefined when it resolved), for asserting on a thrown error. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
    return undefined;
  } catch (err) {
    return err;
  }
}

/** The error a promise rejected with: a LicenseApiError of this status, code and message, without retryAfter. */
export async function apiError(t: Asserts, promise: Promise<unknown>, status: number, code: LicenseErrorCode, message: string): Promise<LicenseApiError> {
  const err = await rejection(promise);
  t.ok(err instanceof LicenseApiError, `${code}: a LicenseApiError (${String(err)})`);
  const e = err as LicenseApiError;
  t.equal(e.status, status, `${code}: status ${status}`);
  t.equal(e.code, code, `${code}: code`);
  t.equal(e.message, message, `${code}: message as published`);
  t.equal(e.retryAfter, undefined, `${code}: no retryAfter`);
  return e;
}
