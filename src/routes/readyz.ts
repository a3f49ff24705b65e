import { Type } from '@sinclair/typebox';
import { reply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { ensureLibrary } from '../redis/library.js';
import { replicasOnline } from '../redis/replicaWait.js';
import type { RouteDoc } from '../openapi/routeDoc.js';
import type { RouteContext } from './context.js';
import { HoldBack, heldBack } from '../http/holdBack.js';
import { PROBE_HOLD_MS, PROBES_PER_SECOND, recentReport, REPORT_MAX_AGE_MS } from './recentReport.js';
import { codedErrors } from './replies.js';
import { SigningKeysMissing, unconfigured } from './unconfigured.js';

/** How long each check may take before it counts as down: a load balancer polls this, and a hung Redis must not hang it. */
const CHECK_TIMEOUT_MS = 1_000;

function withinTimeout(check: Promise<unknown>): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS); });
  return Promise.race([check, late]).finally(() => clearTimeout(timer));
}

const Up = Type.Union([Type.Literal('ok'), Type.Literal('down')]);
const Replicas = Type.Optional(Type.Union([Type.Literal('ok'), Type.Literal('missing')], {
  description: 'present only with REDIS_WAIT_REPLICAS set: "missing" when a master has fewer replicas online than it names, '
    + 'so redemptions answer 503 until they are back; not a failure of the instance, which serves everything else',
}));
const Readiness = Type.Object({
  success: Type.Boolean(), redis: Up, postgres: Up, scripts: Up, replicas: Replicas, signingKeys: SigningKeysMissing,
}, { additionalProperties: false });

const doc: RouteDoc = {
  summary: 'Readiness: this instance can serve',
  description: 'For load balancers: each check may take at most a second. A script library a Redis restart dropped is loaded again here. '
    + 'Past 50 probes a second per process, each is held about a second before it is answered, so a flood slows itself down. '
    + 'Never older than a second: each process of the instance checks at most once a second, and requests that arrive '
    + 'meanwhile share the checks in flight or their answer (the checks behind an answer began less than a second before '
    + 'the request arrived), so any number of probes costs Redis and Postgres one round of checks per second per process. '
    + 'An instance without signing keys is ready (it serves all but license validation and sign) and says so: signingKeys "missing".',
  tags: ['operations'],
  auth: 'none',
  responses: {
    200: {
      description: 'Redis and Postgres answer, and Redis holds every script',
      schema: Readiness,
      examples: [
        { summary: 'ready', value: { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok' } },
        { summary: 'ready, without signing keys', value: { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok', signingKeys: 'missing' } },
        { summary: 'ready, REDIS_WAIT_REPLICAS=1 and the replica down', value: { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok', replicas: 'missing' } },
      ],
    },
    503: {
      description: 'a check failed or took over a second',
      schema: Readiness,
      examples: [{ summary: 'Postgres down', value: { success: false, redis: 'ok', postgres: 'down', scripts: 'ok' } }],
    },
  },
};

/**
 * GET /readyz: 200 only when this instance can serve: Redis and Postgres answer, and Redis
 * holds the scripts' function library (loaded again here when a restart or a FUNCTION FLUSH
 * dropped it).
 * /healthz stays the liveness view, with the worker's lag. Checked at most once a second per
 * process (recentReport): load balancers poll it, each of them as often as it likes.
 */
export function readyRoute(ctx: RouteContext): Route {
  const missing = unconfigured(ctx);
  return {
    method: 'get',
    path: '/readyz',
    errors: codedErrors,
    doc,
    handler: heldBack(new HoldBack(PROBES_PER_SECOND, PROBE_HOLD_MS), recentReport(REPORT_MAX_AGE_MS, () => readiness(ctx, missing))),
  };
}

/** One round of checks; never rejects (a failed or late check is "down"). What is missing is said, and fails nothing. */
async function readiness(ctx: RouteContext, missing: ReturnType<typeof unconfigured>): Promise<Reply> {
  const waitFor = ctx.config.redisWait.replicas;
  const [redis, postgres, scripts, replicas] = await Promise.allSettled([
    withinTimeout(ctx.redis.ping()), withinTimeout(ctx.sql`select 1`), withinTimeout(ensureLibrary(ctx.redis)),
    waitFor > 0 ? withinTimeout(replicasOnline(ctx.redis, waitFor)) : Promise.resolve(null),
  ]);
  const state = (r: PromiseSettledResult<unknown>) => (r.status === 'fulfilled' ? 'ok' : 'down');
  const ok = redis.status === 'fulfilled' && postgres.status === 'fulfilled' && scripts.status === 'fulfilled';
  const waiting = waitFor > 0 ? { replicas: replicas.status === 'fulfilled' && replicas.value === true ? 'ok' : 'missing' } : {};
  return reply(ok ? 200 : 503, { success: ok, redis: state(redis), postgres: state(postgres), scripts: state(scripts), ...waiting, ...missing });
}
