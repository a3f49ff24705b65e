import type { Count, Observe } from './cells.js';
import type { Metrics } from './registry.js';

/**
 * What the HTTP layer records of one method and route pattern (src/http/answer.ts, where
 * every answer is written): answers by status, and how long each took. Bound once per
 * route at start; a status's series on its first answer, so the request path only adds.
 */
export class RequestMeter {
  /** by status line ("200 OK"): the reply tables' constant strings, so a look-up allocates nothing */
  private readonly byStatus = new Map<string, Count>();
  private readonly duration: Observe;

  private readonly method: string;

  constructor(private readonly metrics: Metrics, method: string, private readonly route: string) {
    this.method = method.toUpperCase();
    this.duration = metrics.httpDuration.series({ method: this.method, route });
  }

  /** An answer was written; startedAt: metrics.now() when the request arrived. */
  answered(status: string, startedAt: number): void {
    if (!this.metrics.enabled) return;
    let count = this.byStatus.get(status);
    if (count === undefined) {
      count = this.metrics.httpRequests.series({ method: this.method, route: this.route, status: status.slice(0, 3) });
      this.byStatus.set(status, count);
    }
    count.inc();
    this.duration.observe((performance.now() - startedAt) / 1000);
  }
}

/** The route label of a path no route serves: never the path itself (it may hold a license key, and paths are endless). */
export const UNMATCHED = 'unmatched';

/** The meters of an HTTP server: one per route (bound at start), one for unmatched paths, and per path one for other methods. */
export class HttpMeters<R extends { method: string; path: string }> {
  readonly unmatched: RequestMeter;
  private readonly byRoute: Map<R, RequestMeter>;
  /** a path's answers to a method none of its routes serves (405, OPTIONS): made on first use */
  private readonly otherMethods = new Map<string, { options: RequestMeter; other: RequestMeter }>();

  constructor(private readonly metrics: Metrics, routes: readonly R[]) {
    this.byRoute = new Map(routes.map((r) => [r, new RequestMeter(metrics, r.method, r.path)]));
    this.unmatched = new RequestMeter(metrics, 'other', UNMATCHED);
  }

  of(route: R): RequestMeter {
    return this.byRoute.get(route) as RequestMeter;
  }

  /** path: the route pattern of the path the request matched; method as uWS gives it (lower case) */
  otherMethod(path: string, method: string): RequestMeter {
    let meters = this.otherMethods.get(path);
    if (!meters) {
      meters = { options: new RequestMeter(this.metrics, 'options', path), other: new RequestMeter(this.metrics, 'other', path) };
      this.otherMethods.set(path, meters);
    }
    return method === 'options' ? meters.options : meters.other;
  }
}
