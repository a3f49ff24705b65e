import { Type } from '@sinclair/typebox';
import { reply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { usageLag, usageLagMs } from '../usage/lag.js';
import type { RouteDoc } from '../openapi/routeDoc.js';
import type { RouteContext } from './context.js';
import { HoldBack, heldBack } from '../http/holdBack.js';
import { PROBE_HOLD_MS, PROBES_PER_SECOND, recentReport, REPORT_MAX_AGE_MS } from './recentReport.js';
import { codedErrors } from './replies.js';
import { SigningKeysMissing, unconfigured } from './unconfigured.js';

const Up = Type.Union([Type.Literal('ok'), Type.Literal('down')]);
const countOrNull = (description: string) => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: `${description}; null while Redis is down` });
const Health = Type.Object({
  success: Type.Boolean(), redis: Up, postgres: Up,
  usageLag: countOrNull('usage events not yet in Postgres'),
  usageLagMs: countOrNull('how long the oldest of them has waited, ms'),
  deadLetters: countOrNull('events Postgres refused for good, waiting for a replay'),
  signingKeys: SigningKeysMissing,
}, { additionalProperties: false });

const doc: RouteDoc = {
  summary: 'Liveness: Redis, Postgres, the usage worker\'s lag and the dead letters',
  description: 'Never older than a second: each process of the instance computes it at most once a second. '
    + 'Past 50 probes a second per process, each is held about a second before it is answered, so a flood slows itself down. '
    + 'Requests that arrive meanwhile share the computation in flight or its answer, so the checks behind an answer '
    + 'began less than a second before the request arrived, and any number of probes costs Redis and Postgres '
    + 'one round of checks per second per process. An instance without signing keys says so (signingKeys "missing"), '
    + 'still 200: it serves all but license validation and sign.',
  tags: ['operations'],
  auth: 'none',
  responses: {
    200: {
      description: 'Redis and Postgres reachable',
      schema: Health,
      examples: [
        { summary: 'healthy', value: { success: true, redis: 'ok', postgres: 'ok', usageLag: 3, usageLagMs: 120, deadLetters: 0 } },
        {
          summary: 'healthy, without signing keys',
          value: { success: true, redis: 'ok', postgres: 'ok', usageLag: 3, usageLagMs: 120, deadLetters: 0, signingKeys: 'missing' },
        },
      ],
    },
    503: {
      description: 'Redis or Postgres unreachable',
      schema: Health,
      examples: [{ summary: 'Redis down', value: { success: false, redis: 'down', postgres: 'ok', usageLag: null, usageLagMs: null, deadLetters: null } }],
    },
  },
};

/**
 * GET /healthz: Redis and Postgres reachable, the usage worker's lag (events not yet in
 * Postgres, and how long the oldest has waited) and the dead letters (events Postgres refused for good, waiting for a replay).
 * Computed at most once a second per process (recentReport): one computation is a Postgres
 * query and two Redis commands per usage stream, too dear for an endpoint anyone may call at
 * any rate.
 */
export function healthRoute(ctx: RouteContext): Route {
  const missing = unconfigured(ctx);
  return {
    method: 'get',
    path: '/healthz',
    errors: codedErrors,
    doc,
    handler: heldBack(new HoldBack(PROBES_PER_SECOND, PROBE_HOLD_MS), recentReport(REPORT_MAX_AGE_MS, () => healthReport(ctx, missing))),
  };
}

/** One round of checks. Never rejects: a Redis that fails the lag reads after its ping is down too. What is missing is said, and fails nothing. */
async function healthReport(ctx: RouteContext, missing: ReturnType<typeof unconfigured>): Promise<Reply> {
  const [ping, postgres] = await Promise.allSettled([ctx.redis.ping(), ctx.sql`select 1`]);
  const counts = ping.status === 'fulfilled'
    ? await Promise.all([usageLag(ctx.redis, ctx.keys), usageLagMs(ctx.redis, ctx.keys), ctx.redis.xlen(ctx.keys.deadLetters)]).catch(() => null)
    : null;
  const redisUp = counts !== null;
  const postgresUp = postgres.status === 'fulfilled';
  const [lag, lagMs, deadLetters] = counts ?? [null, null, null];
  return reply(redisUp && postgresUp ? 200 : 503, {
    success: redisUp && postgresUp,
    redis: redisUp ? 'ok' : 'down',
    postgres: postgresUp ? 'ok' : 'down',
    usageLag: lag,
    usageLagMs: lagMs,
    deadLetters,
    ...missing,
  });
}
