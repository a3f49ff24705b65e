import { reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { ensureScriptsLoaded } from '../redis/client.js';
import type { RouteContext } from './context.js';
import { codedErrors } from './replies.js';

/** How long each check may take before it counts as down: a load balancer polls this, and a hung Redis must not hang it. */
const CHECK_TIMEOUT_MS = 1_000;

function withinTimeout(check: Promise<unknown>): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS); });
  return Promise.race([check, late]).finally(() => clearTimeout(timer));
}

/**
 * GET /readyz: 200 only when this instance can serve: Redis and Postgres answer, and Redis
 * holds every script (loaded again here when a restart or a SCRIPT FLUSH dropped them).
 * /healthz stays the liveness view, with the worker's lag.
 */
export function readyRoute(ctx: RouteContext): Route {
  return {
    method: 'get',
    path: '/readyz',
    errors: codedErrors,
    async handler() {
      const [redis, postgres, scripts] = await Promise.allSettled([
        withinTimeout(ctx.redis.ping()), withinTimeout(ctx.sql`select 1`), withinTimeout(ensureScriptsLoaded(ctx.redis)),
      ]);
      const state = (r: PromiseSettledResult<unknown>) => (r.status === 'fulfilled' ? 'ok' : 'down');
      const ok = redis.status === 'fulfilled' && postgres.status === 'fulfilled' && scripts.status === 'fulfilled';
      return reply(ok ? 200 : 503, { success: ok, redis: state(redis), postgres: state(postgres), scripts: state(scripts) });
    },
  };
}
