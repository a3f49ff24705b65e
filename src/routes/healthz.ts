import { reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { usageLag, usageLagMs } from '../usage/lag.js';
import type { RouteContext } from './context.js';
import { codedErrors } from './replies.js';

/**
 * GET /healthz: Redis and Postgres reachable, the usage worker's lag (events not yet in
 * Postgres, and how long the oldest has waited) and the dead letters (events Postgres refused for good, waiting for a replay).
 */
export function healthRoute(ctx: RouteContext): Route {
  return {
    method: 'get',
    path: '/healthz',
    errors: codedErrors,
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
