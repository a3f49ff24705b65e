import type { ChildProcess } from 'node:child_process';
import { labelledBy, metricsText, monotonic, sumMetrics, type MetricJson } from './merge.js';
import { SCRAPE_TIMEOUT_MS, type ProcessReport } from './registry.js';

// GET /metrics of an instance of WORKERS processes (docs/operations.md#metrics), the primary's side.
// A scrape reaches one child; that child asks the primary, the primary asks every child for
// what it has counted (over the IPC channel fork gives each child), waits at most
// SCRAPE_TIMEOUT_MS, adds everything up and answers the child with the text. Nothing of this
// runs on the request path: children record as a lone process does and are asked only when
// scraped.
//
// Counters never go back: the primary keeps each child's latest report, and when a child
// exits, what it last reported (counters and histograms) stays in its slot's totals, to
// which its successor's figures are added. A child that does not answer in time (hung) is
// counted with its latest report. What a killed child counted after its latest report is
// lost with it, never counted twice.

/** primary -> child: report your figures */
export interface ReportAsk { type: 'metrics:ask'; id: number }
/** child -> primary: its figures, answering ask id */
export interface ReportAnswer { type: 'metrics:report'; id: number; report: ProcessReport }
/** child -> primary: a scrape reached me, the instance's text please */
export interface ScrapeAsk { type: 'metrics:scrape'; id: number }
/** primary -> child: the instance's text (without the gauges the child reads from Redis); null: it could not be made */
export interface ScrapeAnswer { type: 'metrics:instance'; id: number; text: string | null }

/** The label that keeps each child's Node figures (process_, nodejs_) apart. */
export const CHILD_LABEL = 'child';

const NOTHING: ProcessReport = { summed: [], perProcess: [] };

interface Slot {
  index: number;
  child: ChildProcess | null;
  /** the running child's latest report, and the ask it answered (asks are numbered in order) */
  latest: ProcessReport | null;
  latestAsk: number;
  /** the counters and histograms of this slot's children that are gone, summed */
  gone: ProcessReport;
  /** children of this slot that died and were started again */
  restarts: number;
  /** asks this slot's child has not answered yet: each one's end */
  waiting: Map<number, () => void>;
}

export class InstanceMetrics {
  private readonly slots: Slot[];
  private asks = 0;

  constructor(children: number, private readonly timeoutMs = SCRAPE_TIMEOUT_MS) {
    this.slots = Array.from({ length: children }, (_, index) =>
      ({ index, child: null, latest: null, latestAsk: 0, gone: NOTHING, restarts: 0, waiting: new Map() }));
  }

  /** The child of slot index serves (it said it listens): a scrape asks it from now on. */
  started(index: number, child: ChildProcess): void {
    const slot = this.slot(index);
    slot.child = child;
    slot.latest = null;
    slot.latestAsk = 0;
  }

  /** The child of slot index exited: what it last reported stays counted. */
  exited(index: number, child: ChildProcess): void {
    const slot = this.slot(index);
    if (slot.child !== child) return;
    if (slot.latest) {
      slot.gone = {
        summed: sumMetrics([slot.gone.summed, monotonic(slot.latest.summed)]),
        perProcess: sumMetrics([slot.gone.perProcess, monotonic(slot.latest.perProcess)]),
      };
    }
    slot.child = null;
    slot.latest = null;
    for (const end of [...slot.waiting.values()]) end();
  }

  /** The primary starts slot index's child again after it died. */
  restarting(index: number): void {
    this.slot(index).restarts++;
  }

  /** A message of the child of slot index; true when it was about metrics (and is handled). */
  received(index: number, child: ChildProcess, message: unknown): boolean {
    const m = message as Partial<ReportAnswer | ScrapeAsk> | null;
    if (m?.type === 'metrics:report' && typeof m.id === 'number' && m.report) {
      const slot = this.slot(index);
      // a late answer of a dead child is already counted (its latest report was kept), and
      // an answer to an older ask never replaces a newer one: so figures only grow
      if (slot.child === child && m.id > slot.latestAsk) {
        slot.latest = m.report;
        slot.latestAsk = m.id;
      }
      slot.waiting.get(m.id)?.();
      return true;
    }
    if (m?.type === 'metrics:scrape' && typeof m.id === 'number') {
      const id = m.id;
      const answer = (text: string | null) => send(child, { type: 'metrics:instance', id, text } satisfies ScrapeAnswer);
      this.gather().then(answer, () => answer(null));
      return true;
    }
    return false;
  }

  /** The instance's text: every child asked, each answer awaited at most timeoutMs, the figures added up. */
  async gather(): Promise<string> {
    const id = ++this.asks;
    await Promise.all(this.slots.map((slot) => this.ask(slot, id)));
    const parts: MetricJson[][] = [];
    for (const slot of this.slots) {
      const child = String(slot.index);
      parts.push(slot.gone.summed, labelledBy(slot.gone.perProcess, CHILD_LABEL, child));
      if (slot.latest) {
        // a child that did not answer this time: its counters as last reported, none of its gauges (they would be stale)
        const pick = this.answered(slot, id) ? (m: MetricJson[]) => m : monotonic;
        parts.push(pick(slot.latest.summed), labelledBy(pick(slot.latest.perProcess), CHILD_LABEL, child));
      }
    }
    parts.push(this.children(id));
    return metricsText(sumMetrics(parts));
  }

  private answered(slot: Slot, id: number): boolean {
    return slot.latest !== null && slot.latestAsk >= id;
  }

  /** Asks the child of slot for its report; resolves when it answered, exited, or after timeoutMs. */
  private ask(slot: Slot, id: number): Promise<void> {
    const child = slot.child;
    if (child === null || !child.connected) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const end = () => {
        clearTimeout(timer);
        slot.waiting.delete(id);
        resolve();
      };
      const timer = setTimeout(end, this.timeoutMs);
      slot.waiting.set(id, end);
      send(child, { type: 'metrics:ask', id } satisfies ReportAsk, end);
    });
  }

  /** What the primary knows of its children. */
  private children(id: number): MetricJson[] {
    const labels = (slot: Slot) => ({ [CHILD_LABEL]: String(slot.index) });
    return [
      {
        name: 'license_child_up',
        help: `1: the child answered this scrape; 0: it is being restarted or did not answer within ${this.timeoutMs} ms (its counters as it last reported them)`,
        type: 'gauge',
        values: this.slots.map((slot) => ({ labels: labels(slot), value: this.answered(slot, id) ? 1 : 0 })),
      },
      {
        name: 'license_child_restarts_total',
        help: 'Children that died and were started again by the primary, by child',
        type: 'counter',
        values: this.slots.map((slot) => ({ labels: labels(slot), value: slot.restarts })),
      },
    ];
  }

  private slot(index: number): Slot {
    const slot = this.slots[index];
    if (!slot) throw new Error(`no child ${index}`);
    return slot;
  }
}

/** Sends over a child's IPC channel; a channel already closed (the child is exiting) calls failed instead of throwing. */
function send(child: ChildProcess, message: ReportAsk | ScrapeAnswer, failed: () => void = () => {}): void {
  if (!child.connected) {
    failed();
    return;
  }
  child.send(message, (err) => {
    if (err) failed();
  });
}
