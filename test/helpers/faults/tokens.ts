import { timedCall, type Timed } from '../http.js';
import { claimsOf } from '../jwt.js';
import { MSG } from '../shapes.js';
import type { Stack } from './stack.js';

// Sign tokens held outside the load (minted before a fault with the minter, helpers/tokens.ts),
// validated while the fault lasts (validateWhile) or all at once after it (validateAll).

/**
 * Validates the tokens over and over, `concurrency` at a time, while `during()` holds (a
 * request is sent only then): clients whose redemptions meet the fault.
 */
export async function validateWhile(stack: Stack, tokens: string[], during: () => boolean, concurrency = 8): Promise<Timed[]> {
  const out: Timed[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (during()) {
      const jwt = tokens[next++ % tokens.length] as string;
      out.push(await timedCall(stack.url(), 'POST', '/api/license/validate', { token: jwt }));
    }
  }));
  return out;
}

/** Validates each token (concurrency 16); resolves with the outcomes counted by label, and the 200s. */
export async function validateAll(stack: Stack, tokens: string[]): Promise<{ counts: Record<string, number>; ok: string[]; wrong: unknown[] }> {
  const counts: Record<string, number> = {};
  const ok: string[] = [];
  const wrong: unknown[] = [];
  for (let i = 0; i < tokens.length; i += 16) {
    await Promise.all(tokens.slice(i, i + 16).map(async (jwt) => {
      const o = await stack.request('POST', '/api/license/validate', { token: jwt });
      const label = o.kind === 'answer'
        ? o.status === 400 && o.body?.message === MSG.USED && Object.keys(o.body).length === 2 && o.body.success === false
          ? 'used' : String(o.status)
        : o.kind;
      counts[label] = (counts[label] ?? 0) + 1;
      if (label === '200') ok.push(claimsOf(jwt).token_id);
      if (label !== 'used') wrong.push(o.kind === 'answer' ? { status: o.status, body: o.body } : o);
    }));
  }
  return { counts, ok, wrong };
}
