/**
 * Answers of one kind held back once too many arrive: a process answers up to `perSecond`
 * of them at once in each second and holds the rest `holdMs` first. A client that waits for
 * its answer before asking again (an HTTP client without pipelining; a flood tool in a
 * closed loop) then asks at most once per holdMs per connection, so a flood of cheap public
 * requests slows itself down instead of taking the core from redemptions, while probes and
 * clients at a sane rate are answered at once. At most `maxHeld` answers wait at a time
 * (past that, answered at once): memory stays bounded under any flood.
 */
export class HoldBack {
  private windowStart = -Infinity;
  private inWindow = 0;
  private held = 0;

  constructor(private readonly perSecond: number, private readonly holdMs: number, private readonly maxHeld = 10_000) {}

  /** The longest a held answer waits: holdMs and its spread of +25 % (wait). */
  get longestMs(): number {
    return this.holdMs * 1.25;
  }

  /** null: answer now (no allocation on that path); else a promise resolved after holdMs. */
  wait(): Promise<void> | null {
    const now = performance.now();
    if (now - this.windowStart >= 1000) {
      this.windowStart = now;
      this.inWindow = 0;
    }
    if (++this.inWindow <= this.perSecond || this.held >= this.maxHeld) return null;
    this.held++;
    // spread over ±25 %: held answers all due at once would come back as one burst, and
    // their clients' next requests with them
    return new Promise((resolve) => setTimeout(() => {
      this.held--;
      resolve();
    }, this.holdMs * (0.75 + Math.random() * 0.5)));
  }
}

/**
 * `answer` behind a HoldBack: at once within the allowance, after the hold past it. An answer
 * ready at once (a prebuilt reply) stays synchronous on the allowed path: nothing allocated.
 */
export function heldBack<T>(gate: HoldBack, answer: () => T | Promise<T>): () => T | Promise<T> {
  return () => {
    const held = gate.wait();
    return held === null ? answer() : held.then(answer);
  };
}

/**
 * At most `slots` tasks of a kind at once in this process; the others wait their turn, in
 * order. For heavy answers (a history page of 500 rows): a burst of them is served a few at
 * a time between other requests, instead of all at once ahead of them.
 */
export class Turns {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly slots: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.busy < this.slots) this.busy++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy--;
    }
  }
}
