import type { ReportAnswer, ReportAsk, ScrapeAnswer, ScrapeAsk } from './instance.js';
import { joinTexts, SCRAPE_TIMEOUT_MS, withinTimeout, type Metrics } from './registry.js';

// GET /metrics of an instance of WORKERS processes, a child's side (the primary's:
// src/metrics/instance.ts). The child answers the primary's asks with what it has counted;
// a scrape that reaches it asks the primary for the whole instance's figures and adds the
// usage gauges, which it reads from Redis itself, once (they are the instance's already).

/** How long a scrape waits for the primary: its own wait for the children, and a second more. */
export const PRIMARY_WAIT_MS = SCRAPE_TIMEOUT_MS + 1_000;

/** The IPC channel to the primary (the child's process object). */
export interface PrimaryChannel {
  send?(message: ReportAnswer | ScrapeAsk, callback?: (err: Error | null) => void): boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

export class ChildScrape {
  readonly contentType: string;
  private asks = 0;
  private readonly waiting = new Map<number, (text: string | null) => void>();

  constructor(private readonly metrics: Metrics, private readonly channel: PrimaryChannel = process) {
    this.contentType = metrics.contentType;
    channel.on('message', (message) => this.received(message));
  }

  /** The text of GET /metrics: the instance's figures; rejects (503) when the primary does not answer within PRIMARY_WAIT_MS. */
  async scrape(): Promise<string> {
    const [instance, redis] = await Promise.all([this.askPrimary(), this.metrics.scrapeRedis()]);
    return joinTexts([instance, redis]);
  }

  private askPrimary(): Promise<string> {
    const id = ++this.asks;
    const answer = new Promise<string>((resolve, reject) => {
      this.waiting.set(id, (text) => (text === null ? reject(new Error('the primary could not gather the metrics')) : resolve(text)));
      const ask: ScrapeAsk = { type: 'metrics:scrape', id };
      if (!this.channel.send) reject(new Error('no channel to the primary'));
      else this.channel.send(ask, (err) => { if (err) reject(err); });
    });
    return withinTimeout(answer, PRIMARY_WAIT_MS).finally(() => this.waiting.delete(id));
  }

  private received(message: unknown): void {
    const m = message as Partial<ReportAsk | ScrapeAnswer> | null;
    if (m?.type === 'metrics:ask' && typeof m.id === 'number') {
      const id = m.id;
      void this.metrics.report().then((report) => {
        const answer: ReportAnswer = { type: 'metrics:report', id, report };
        this.channel.send?.(answer, () => {}); // a primary gone: the child stops by itself (src/cli/server.ts)
      }, () => {}); // unanswered: the primary counts this child with its latest report
    } else if (m?.type === 'metrics:instance' && typeof m.id === 'number') {
      this.waiting.get(m.id)?.(m.text ?? null);
    }
  }
}
