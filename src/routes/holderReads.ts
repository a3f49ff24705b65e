import type { TSchema } from '@sinclair/typebox';
import { RATE_WINDOW_MS } from '../config.js';
import { HoldBack, Turns } from '../http/holdBack.js';
import type { Reply } from '../http/reply.js';
import type { Request, Route } from '../http/route.js';
import type { Case, RateLimitDoc, RouteDoc } from '../openapi/routeDoc.js';
import { RateLimitedError } from '../openapi/schemas.js';
import { Outcome } from '../redis/outcomes.js';
import { runScript } from '../redis/scriptCall.js';
import { scripts } from '../redis/scriptBuilders.js';
import type { RouteContext } from './context.js';
import { RateLimitFields } from './rateLimitFields.js';
import { pageLimit } from './paging.js';
import { authReplies, coded, codedErrors, INVALID_LICENSE_KEY, invalidRequest, rateLimited } from './replies.js';
import { bearer, licenseKeyParam, queryParser, type Parsed } from './schemas.js';

// What a license holder reads of the license with an access token (GET /api/License/history
// and GET /api/License/ledger) goes through one gate: the access token of that very license,
// one limit (RATE_HISTORY_PER_MIN, one Redis counter per license: a holder splitting reads
// across the two endpoints gets no more Postgres reads than one would allow), refusals held
// back, and at most PAGES_AT_ONCE pages read and built at once per process, whichever kind.

//                               status  code          message
export const invalidKey = coded(400, ...INVALID_LICENSE_KEY);
export const forbidden = coded(403, 'FORBIDDEN', 'Bu lisansın geçmişine erişim yetkiniz yok');

/**
 * The answers that carry the RateLimit fields: those that passed the count, which comes after
 * every check that needs no look-up and after the license check (a token of another license
 * spends nothing of this one's), and before Postgres is read (src/openapi/routeDoc.ts RateLimitDoc).
 */
const LIMIT = {
  per: 'license (history and ledger together)', setting: 'RATE_HISTORY_PER_MIN',
  statuses: {
    200: 'every',
    401: 'INVALID_TOKEN for an access token revoked by a password change or a deactivation (not for one missing, malformed '
      + 'or expired: refused before any look-up)',
    429: 'every',
  },
} as const;

/** How long a refusal by the limit is held before it is answered (not when the window ends sooner). */
const REFUSAL_HOLD_MS = 1_000;

/**
 * Pages read and built at once per process: a burst of full pages (500 rows each) waits its
 * turn, a page or two at a time, between other customers' redemptions.
 */
const PAGES_AT_ONCE = 2;

/** A request's own checks that need no look-up (the query, the cursor): its value, or the refusal. */
export type Checked<T> = { ok: true; value: T } | { ok: false; refusal: Reply };

/**
 * The check of a holder's paged read (history, ledger): its `limit` and `cursor` parsed by the
 * route's query parser and cursor decoder, or the 400 naming the field.
 */
function pageQueryCheck<C>(
  parseQuery: (raw: string) => Parsed<{ limit?: string; cursor?: string }>, decodeCursor: (text: string) => C | null,
): (raw: string) => Checked<{ pageSize: number; cursor: C | null }> {
  return (raw) => {
    const query = parseQuery(raw);
    if (!query.ok) return { ok: false, refusal: invalidRequest(query.field) };
    const cursor = query.value.cursor === undefined ? null : decodeCursor(query.value.cursor);
    if (query.value.cursor !== undefined && cursor === null) return { ok: false, refusal: invalidRequest('cursor') };
    return { ok: true, value: { pageSize: pageLimit(query.value.limit), cursor } };
  };
}

export class HolderReads {
  readonly fields: RateLimitFields;
  private readonly refusals = new HoldBack(0, REFUSAL_HOLD_MS);
  private readonly pages = new Turns(PAGES_AT_ONCE);

  constructor(private readonly ctx: RouteContext) {
    this.fields = new RateLimitFields('history', ctx.config.rate.history);
  }

  /** The limit as /openapi.json shows it on each route behind this gate. */
  describe(): RateLimitDoc {
    return this.fields.describe(LIMIT);
  }

  /** One Redis call counts the request against its license's limit; null: the limit is off, nothing counted. */
  private count(firmaId: string) {
    const { limit } = this.fields;
    return limit === 0 ? null
      : runScript(this.ctx.redis, scripts.count(this.ctx.keys.forLicense(firmaId).rateHistory, limit, RATE_WINDOW_MS));
  }

  /**
   * The request through the gate, in the order docs/api.md#history-limit publishes: the access
   * token (401), the key (400), the route's own checks (400), the license (403), the count
   * (429), then `read` of the license's firma id in its turn, answered only when the access
   * token's generation is still the license's (else 401: revoked). `read`'s body is the
   * answer's data, with the RateLimit fields added.
   */
  async serve<T>(req: Request, check: (query: string) => Checked<T>, read: (firmaId: string, value: T) => Promise<Reply>): Promise<Reply> {
    const { ctx, fields } = this;
    const token = bearer(req.authorization);
    const claims = token === null ? null : ctx.tokens.verifyAccessToken(token);
    if (claims === null) return authReplies.INVALID_TOKEN;
    const licenseKey = licenseKeyParam(req.params[0]);
    if (licenseKey === null) return invalidKey;
    const checked = check(req.query);
    if (!checked.ok) return checked.refusal;
    // an unknown key is refused as another license's is: the answer tells no key that exists from one that does not
    if ((await ctx.hot.firmaIdOf(licenseKey)) !== claims.firma_id) return forbidden;
    // counted before Postgres is read: a client paging past its limit costs the database nothing
    const counted = await this.count(claims.firma_id);
    const rate = counted?.rate ?? null;
    if (counted?.outcome === Outcome.OVER_RATE_LIMIT) {
      // held back before it is answered (HoldBack): a client paging in a loop slows itself down;
      // not when the window ends within the longest hold (the answer would come after it)
      const until = Date.now() + counted.rate.resetMs;
      const held = counted.rate.resetMs > this.refusals.longestMs ? this.refusals.wait() : null;
      if (held === null) return fields.on(rateLimited(counted.rate.resetMs), rate);
      await held;
      // what is left of the window when the answer goes, as docs/api.md promises, not before the hold
      const leftMs = Math.max(1, until - Date.now());
      return fields.on(rateLimited(leftMs), { ...counted.rate, resetMs: leftMs });
    }
    return this.pages.run(async () => {
      const [generation, answer] = await Promise.all([ctx.store.tokenGeneration(claims.firma_id), read(claims.firma_id, checked.value)]);
      // Postgres holds every admin change before any instance applies it: a token of an older generation is revoked
      if (generation !== claims.gen) return fields.on(authReplies.INVALID_TOKEN, rate);
      return fields.on(answer, rate);
    });
  }
}

/** One gate per route context: history and the ledger share its turns and hold-back as they share the count. */
const gates = new WeakMap<RouteContext, HolderReads>();

export function holderReads(ctx: RouteContext): HolderReads {
  let gate = gates.get(ctx);
  if (gate === undefined) gates.set(ctx, gate = new HolderReads(ctx));
  return gate;
}

/**
 * The refusals of a holder's paged read, as its route documents them: the gate's and the
 * page query's, in the order they are checked; `forbiddenWhen` and `limitedWhen` word the
 * 403 and the 429 for the route.
 */
export function holderPageCases(forbiddenWhen: string, limitedWhen: string): Case[] {
  return [
    ['the key is not a UUID', invalidKey],
    ['limit not 1 to 500', invalidRequest('limit')],
    ['a cursor this server did not hand out', invalidRequest('cursor')],
    ['the access token is missing, malformed, expired or revoked', authReplies.INVALID_TOKEN],
    [forbiddenWhen, forbidden],
    [limitedWhen, rateLimited(42_000), RateLimitedError],
  ];
}

/** What a holder's paged read (history, the ledger) is made of; the rest is the gate's. */
export interface HolderPage<C> {
  path: string;
  doc: RouteDoc;
  /** its query schema: `limit` and `cursor` (./paging.ts pageQueryFields) */
  query: TSchema & { static: { limit?: string; cursor?: string } };
  /** the cursor this route hands out, or null for any other text */
  decodeCursor: (text: string) => C | null;
  /** the answer: the page of the license's firma id, from `cursor` (null: the first page) */
  read: (firmaId: string, page: { pageSize: number; cursor: C | null }) => Promise<Reply>;
}

/** GET `path` of a license's paged read, behind the gate: the access token, the page query, the limit, the turns. */
export function holderPageRoute<C>(ctx: RouteContext, page: HolderPage<C>): Route {
  const parseQuery = queryParser(page.query);
  const gate = holderReads(ctx);
  const check = pageQueryCheck(parseQuery, page.decodeCursor);
  return {
    method: 'get',
    path: page.path,
    errors: codedErrors,
    needsAuthorization: true,
    needsQuery: true,
    cors: true,
    noStore: true,
    doc: { ...page.doc, rateLimits: [gate.describe()] },
    handler: (req) => gate.serve(req, check, page.read),
  };
}
