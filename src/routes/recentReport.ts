/**
 * How old an answer of /healthz or /readyz may be. Both are public and polled (probes, load
 * balancers), and each computation costs round trips to Redis and Postgres: computed for
 * every call, a flood of probes slowed every other request that needs them.
 */
export const REPORT_MAX_AGE_MS = 1_000;

/**
 * Probes a process answers at once each second (per route); past that, each is held a
 * second first (HoldBack): a load balancer's or monitor's checks never reach it, while a
 * flood of probes slows itself down instead of taking the core from redemptions.
 */
export const PROBES_PER_SECOND = 50;
export const PROBE_HOLD_MS = 1_000;

/**
 * A report computed at most once per `maxAgeMs` in this process, however often it is asked
 * for: a caller within maxAgeMs of the latest computation's start gets that computation's
 * result, still in flight (it waits with the others: single flight) or done (from memory);
 * a later caller starts a new one. So no answer rests on checks begun more than maxAgeMs
 * before it was asked for, and a burst of callers costs one computation, not one each.
 * The age counts from the start rather than the end, so a slow check cannot stretch it;
 * `compute` should not reject (a rejection would be every caller's answer until the next).
 */
export function recentReport<T>(
  maxAgeMs: number, compute: () => Promise<T>, now: () => number = () => performance.now(),
): () => Promise<T> {
  let latest: { startedAt: number; result: Promise<T> } | null = null;
  return () => {
    const at = now();
    if (latest === null || at - latest.startedAt >= maxAgeMs) latest = { startedAt: at, result: compute() };
    return latest.result;
  };
}
