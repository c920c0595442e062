import type { FailFrame, ReplyFrame } from './frames.js';

/** What became of one live event sent to the channel's listeners. */
export type Outcome =
  | { kind: 'reply'; frame: ReplyFrame }
  | { kind: 'fail'; frame: FailFrame }
  | { kind: 'timeout' }
  /** Every listener it was sent to disconnected first (or none took it): it stays buffered for the catch-up. */
  | { kind: 'gone' };

export const GONE: Outcome = Object.freeze({ kind: 'gone' });

/**
 * One live event waiting for its first reply: the local listeners it was sent to, and the answers due
 * from other relay processes it was published to. It ends once: with the first reply; else, once every
 * listener failed or went away and every process answered, with the first `fail` or with `gone`; or on
 * `timeout()`. The same rule whether the listeners are here or behind another process.
 */
export class Pending {
  readonly #waiting: Set<object>;
  readonly #finish: (outcome: Outcome) => void;
  /** Answers still due from other processes; `null` while the publish that says how many is on its way. */
  #remote: number | null = 0;
  /** Answers that came before their count did (they travel on another connection than the publish's reply). */
  #early = 0;
  #firstFail: FailFrame | null = null;
  #done = false;

  constructor(waiting: Iterable<object>, finish: (outcome: Outcome) => void) {
    this.#waiting = new Set(waiting);
    this.#finish = finish;
  }

  reply(frame: ReplyFrame): void {
    this.#end({ kind: 'reply', frame });
  }

  /** A listener here could not reach its local app; false when it was not waited for. */
  fail(listener: object, frame: FailFrame): boolean {
    if (!this.#waiting.delete(listener)) return false;
    this.#firstFail ??= frame;
    this.#settle();
    return true;
  }

  /** A listener here went away before answering. */
  gone(listener: object): void {
    if (this.#waiting.delete(listener)) this.#settle();
  }

  /** The event is being published to other processes: wait for their count. */
  publishing(): void {
    this.#remote = null;
  }

  /** `count` processes received the event: each will answer once. */
  published(count: number): void {
    this.#remote = count - this.#early;
    this.#early = 0;
    this.#settle();
  }

  /** One process's answer: what its listeners made of the event. */
  answered(outcome: Outcome): void {
    if (outcome.kind === 'reply') return this.#end(outcome);
    if (outcome.kind === 'fail') this.#firstFail ??= outcome.frame;
    if (this.#remote === null) this.#early++;
    else this.#remote--;
    this.#settle();
  }

  timeout(): void {
    this.#end({ kind: 'timeout' });
  }

  /** Ends it as `gone` whatever is still due: the relay is shutting down. */
  abandon(): void {
    this.#end(GONE);
  }

  #settle(): void {
    if (this.#waiting.size > 0 || this.#remote === null || this.#remote > 0) return;
    this.#end(this.#firstFail ? { kind: 'fail', frame: this.#firstFail } : GONE);
  }

  #end(outcome: Outcome): void {
    if (this.#done) return;
    this.#done = true;
    this.#finish(outcome);
  }
}
