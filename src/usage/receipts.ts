import { createHash } from 'node:crypto';

// What Postgres keeps of a sign's receipt (the JSON payload the route signed, carried by
// its used event: src/redis/fields.ts EVENT_RECEIPT): how many documents it names, and its
// digest, which is what an operator looks a receipt up by (docs/api.md#signing-receipts).

export interface ReceiptFacts {
  documents: number;
  /** lower-case hex SHA-256 of the payload's UTF-8 bytes: the JWS payload segment, decoded */
  sha256: string;
}

/** token_redemptions.documents is a smallint */
const MAX_DOCUMENTS = 32_767;

/** The lower-case hex SHA-256 of a receipt payload's bytes; the same whichever key signed it. */
export function receiptDigest(payload: string): string {
  return createHash('sha256').update(payload, 'utf8').digest('hex');
}

/** The facts of a receipt payload, or null when it is not one (the event is then a dead letter). */
export function receiptFacts(payload: string): ReceiptFacts | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const { typ, documents } = parsed as { typ?: unknown; documents?: unknown };
  if (typ !== 'receipt' || !Array.isArray(documents) || documents.length < 1 || documents.length > MAX_DOCUMENTS) return null;
  return { documents: documents.length, sha256: receiptDigest(payload) };
}
