import type { QuotaAnswer } from '../redis/scriptReplies.js';

/**
 * The check-quota answers a process has served, by license key, each with the tag Redis
 * stored it under (lua/quotaAnswer.lua). The process tells Redis the tag it holds, and when
 * that is still the cached answer Redis says so instead of sending the answer again: the
 * same bytes are served, only fewer cross the socket. What Redis holds stays the one answer
 * of every process; this is a copy of it, never an answer of its own.
 *
 * At most `max` keys: past that the oldest held is dropped (its next look comes whole from
 * Redis), so a process polled for every license of a large instance holds a bounded set.
 */
export class HeldAnswers {
  readonly #answers = new Map<string, { tag: string; answer: QuotaAnswer }>();

  constructor(private readonly max: number) {}

  get(licenseKey: string): { tag: string; answer: QuotaAnswer } | undefined {
    return this.#answers.get(licenseKey);
  }

  /** Holds an answer Redis sent with its tag; one stored by an older build has none and is not held. */
  hold(licenseKey: string, tag: string, answer: QuotaAnswer): void {
    if (tag === '') return;
    if (!this.#answers.delete(licenseKey) && this.#answers.size >= this.max) {
      const oldest = this.#answers.keys().next();
      if (oldest.done !== true) this.#answers.delete(oldest.value);
    }
    this.#answers.set(licenseKey, { tag, answer });
  }

  get size(): number {
    return this.#answers.size;
  }
}
