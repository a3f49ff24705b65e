/**
 * One failure line per kind (route and error) and interval: with Redis down every request fails the same
 * way, and a line each would flood the logs (and the disk) at thousands a second.
 */
export class LogThrottle {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(private readonly intervalMs: number) {}

  /** -1: stay quiet; else log now, saying how many were kept quiet since the last line. */
  take(topic: string): number {
    const now = Date.now();
    const entry = this.last.get(topic);
    if (entry === undefined) {
      this.last.set(topic, { at: now, suppressed: 0 });
      return 0;
    }
    if (now - entry.at < this.intervalMs) {
      entry.suppressed++;
      return -1;
    }
    const suppressed = entry.suppressed;
    entry.at = now;
    entry.suppressed = 0;
    return suppressed;
  }
}
