import { Type } from '@sinclair/typebox';
import { reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { usageLag, usageLagMs } from '../usage/lag.js';
import type { RouteDoc } from '../openapi/routeDoc.js';
import type { RouteContext } from './context.js';
import { codedErrors } from './replies.js';

const Up = Type.Union([Type.Literal('ok'), Type.Literal('down')]);
const countOrNull = (description: string) => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: `${description}; null while Redis is down` });
const Health = Type.Object({
  success: Type.Boolean(), redis: Up, postgres: Up,
  usageLag: countOrNull('usage events not yet in Postgres'),
  usageLagMs: countOrNull('how long the oldest of them has waited, ms'),
  deadLetters: countOrNull('events Postgres refused for good, waiting for a replay'),
}, { additionalProperties: false });

const doc: RouteDoc = {
  summary: 'Liveness: Redis, Postgres, the usage worker\'s lag and the dead letters',
  tags: ['operations'],
  auth: 'none',
  responses: {
    200: {
      description: 'Redis and Postgres reachable',
      schema: Health,
      examples: [{ summary: 'healthy', value: { success: true, redis: 'ok', postgres: 'ok', usageLag: 3, usageLagMs: 120, deadLetters: 0 } }],
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
 */
export function healthRoute(ctx: RouteContext): Route {
  return {
    method: 'get',
    path: '/healthz',
    errors: codedErrors,
    doc,
    async handler() {
      const [redis, postgres] = await Promise.allSettled([ctx.redis.ping(), ctx.sql`select 1`]);
      const ok = redis.status === 'fulfilled' && postgres.status === 'fulfilled';
      const redisUp = redis.status === 'fulfilled';
      const [lag, lagMs, deadLetters] = redisUp
        ? await Promise.all([usageLag(ctx.redis, ctx.keys), usageLagMs(ctx.redis, ctx.keys), ctx.redis.xlen(ctx.keys.deadLetters)])
        : [null, null, null];
      return reply(ok ? 200 : 503, {
        success: ok,
        redis: redis.status === 'fulfilled' ? 'ok' : 'down',
        postgres: postgres.status === 'fulfilled' ? 'ok' : 'down',
        usageLag: lag,
        usageLagMs: lagMs,
        deadLetters,
      });
    },
  };
}
