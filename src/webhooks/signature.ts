import { createHmac } from 'node:crypto';

// The signature of a webhook request (docs/api.md#payload-and-signature): X-Webhook-Signature is
// "sha256=" and the lower-case hex HMAC-SHA256, keyed with the license's webhook secret,
// of X-Webhook-Timestamp (Unix seconds, as sent), a ".", and the raw body, byte for byte.
// Signing the timestamp lets a receiver refuse an old request replayed to it.

export const SIGNATURE_HEADER = 'x-webhook-signature';
export const TIMESTAMP_HEADER = 'x-webhook-timestamp';
export const ID_HEADER = 'x-webhook-id';

export function webhookSignature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}
