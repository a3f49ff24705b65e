import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Harness, Teardown } from './harness.js';

// A webhook receiver for the tests: a node:http server on a loopback port that keeps every
// request it gets and answers what the test says; and the receiver's side of the signature,
// written here from docs/api.md#webhooks (not imported from the service), so a test fails if
// the service signs anything else.

/** The settings a webhook test runs with: everything quick. */
export const QUICK_WEBHOOKS: Record<string, string> = {
  WEBHOOK_POLL_MS: '20',
  WEBHOOK_SCAN_INTERVAL_MS: '50',
  WEBHOOK_BACKOFF_MS: '20',
  WEBHOOK_BACKOFF_MAX_MS: '100',
  WEBHOOK_TIMEOUT_MS: '2000',
};

/**
 * The receivers here are http:// on 127.0.0.1, which the service refuses by default
 * (docs/api.md#where-a-webhook-may-go): a test that delivers to one allows both, as an on-premises deployment would.
 */
export const LOCAL_RECEIVERS: Record<string, string> = {
  WEBHOOK_ALLOW_HTTP: '1',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1',
};

export interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  /** the body's bytes as text, as signed */
  raw: string;
  body: { id: string; type: string; createdAt: string; data: Record<string, unknown> };
  /** this delivery's number among those of the same X-Webhook-Id (1 for the first) */
  nth: number;
}

type Answer = number | { status: number; headers?: Record<string, string> };
/** The status to answer (and headers), given a delivery; a promise that never settles: no answer at all. */
export type Responder = (d: Delivery) => Answer | Promise<Answer>;

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  respond: Responder;
  /** TCP connections accepted so far, whether or not a request came on them */
  connections: number;
  /** deliveries to one path, or of one event type there */
  to(path: string, type?: string): Delivery[];
}

export async function startReceiver(t: Teardown, respond: Responder = () => 200): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const seen = new Map<string, number>();
  const receiver: Receiver = {
    url: '',
    deliveries,
    respond,
    connections: 0,
    to: (path, type) => deliveries.filter((d) => d.path === path && (type === undefined || d.body.type === type)),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Delivery['body'];
      try {
        body = JSON.parse(raw) as Delivery['body'];
      } catch {
        body = { id: '', type: 'unreadable', createdAt: '', data: {} };
      }
      const id = String(req.headers['x-webhook-id'] ?? '');
      const nth = (seen.get(id) ?? 0) + 1;
      seen.set(id, nth);
      const delivery: Delivery = { path: req.url ?? '', headers: req.headers, raw, body, nth };
      deliveries.push(delivery);
      void Promise.resolve(receiver.respond(delivery)).then((answer) => {
        const { status, headers } = typeof answer === 'number' ? { status: answer, headers: {} } : answer;
        res.writeHead(status, { 'content-type': 'text/plain', ...headers });
        res.end('ok');
      });
    });
  });
  server.on('connection', () => { receiver.connections++; });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return receiver;
}

/** Whether a delivery carries a valid signature for the secret: sha256=hex(HMAC-SHA256(secret, timestamp + "." + body)). */
export function signatureValid(d: Delivery, secret: string): boolean {
  const timestamp = d.headers['x-webhook-timestamp'];
  const signature = d.headers['x-webhook-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(`${timestamp}.${d.raw}`).digest('hex')}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The outbox rows of a license, oldest first. */
export async function outboxOf(h: Harness, firmaId: string) {
  return h.sql`
    select id::text as id, event_key, type, payload, attempts, delivered_at, failed_at, last_status, last_error
    from webhook_events where firma_id = ${firmaId} order by created_at, event_key`;
}

/** Sets a license's webhook through the admin API. */
export async function setWebhook(h: Harness, licenseKey: string, webhookUrl: string | null, webhookSecret?: string): Promise<void> {
  const res = await h.admin('PATCH', `/admin/v1/licenses/${licenseKey}`, webhookSecret === undefined ? { webhookUrl } : { webhookUrl, webhookSecret });
  if (res.status !== 200) throw new Error(`set webhook: ${res.status} ${res.text}`);
}
