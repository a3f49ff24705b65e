// Where an import is, on stderr: a bar redrawn in place on a terminal, else a plain line
// every few seconds (a log file should not fill with redraws).

export interface Counts {
  created: number;
  rejected: number;
  /** rows read so far (done or in flight), from `bytes` of the file's `size` bytes */
  read: number;
  bytes: number;
  size: number;
}

/** The share of the file done: rows done of the rows the file holds, estimated from those read so far. */
function shareDone({ created, rejected, read, bytes, size }: Counts): number {
  if (size === 0 || bytes === 0) return 1;
  if (read === 0) return 0;
  return Math.min(1, ((created + rejected) * bytes) / (read * size));
}

const BAR_WIDTH = 30;
const REDRAW_MS = 100;
const LINE_MS = 5_000;

export class Progress {
  private readonly timer: NodeJS.Timeout;
  private readonly started = Date.now();
  private readonly tty: boolean;

  constructor(private readonly counts: Counts, private readonly stream: NodeJS.WriteStream = process.stderr) {
    this.tty = stream.isTTY === true;
    this.timer = setInterval(() => this.draw(), this.tty ? REDRAW_MS : LINE_MS);
    this.timer.unref();
  }

  private text(): string {
    const { created, rejected } = this.counts;
    const share = shareDone(this.counts);
    const rows = created + rejected;
    const seconds = (Date.now() - this.started) / 1000;
    const rate = seconds > 0 ? Math.round(rows / seconds) : 0;
    return `${Math.floor(share * 100)}% ${rows} rows: ${created} created, ${rejected} rejected, ${rate} rows/s`;
  }

  private draw(): void {
    if (!this.tty) {
      this.stream.write(`import: ${this.text()}\n`);
      return;
    }
    const share = shareDone(this.counts);
    const done = Math.round(share * BAR_WIDTH);
    this.stream.write(`\r[${'#'.repeat(done)}${'-'.repeat(BAR_WIDTH - done)}] ${this.text()}\u001b[K`);
  }

  /** The last state, and the bar's line ended. */
  stop(): void {
    clearInterval(this.timer);
    if (this.tty) {
      this.draw();
      this.stream.write('\n');
    }
  }
}
