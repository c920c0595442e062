// `receiver.inbox`, the public handle on the inbox. No Node module: the back end comes in.
import { INBOX_STATES, type AddOutcome, type InboxBackend, type InboxListOptions, type InboxPurgeOptions, type InboxRecord, type InboxStats } from './record.js';
import type { ResolvedInboxOptions } from './options.js';
import { InboxRunner, type RunnerOptions } from './runner.js';

/** `receiver.inbox.idle(options)`. */
export interface InboxIdleOptions {
  /** Wait for running handlers too; `false` waits for the inbox's own work only. @default true */
  handlers?: boolean;
}

/**
 * The receiver's durable inbox (`receiver.inbox`): every verified, first-seen event is stored here before
 * the 2xx, then run by the handlers, retried with backoff, and kept when it is dead or done.
 * @example
 * const receiver = createReceiver({ secret, inbox: true });
 * const dead = await receiver.inbox!.list({ state: 'dead' });
 * for (const record of dead) await receiver.inbox!.replay(record.id);
 */
export class Inbox {
  readonly #backend: InboxBackend;
  readonly #runner: InboxRunner;
  readonly #clock: () => number;
  readonly #maxPending: number;
  readonly #maxPendingBytes: number;
  readonly #opened: Promise<void>;
  #closed: Promise<void> | null = null;

  /** @internal Made by the receiver. */
  constructor(backend: InboxBackend, options: ResolvedInboxOptions, runner: Omit<RunnerOptions, 'backend' | 'concurrency' | 'backoff' | 'timers' | 'pollMs' | 'closeTimeout' | 'handlerTimeout'>, redis: boolean) {
    this.#backend = backend;
    this.#clock = runner.clock;
    this.#maxPending = options.maxPending;
    this.#maxPendingBytes = options.maxPendingBytes;
    this.#runner = new InboxRunner({
      ...runner,
      backend,
      concurrency: options.concurrency,
      backoff: options.backoff,
      timers: options.timers,
      pollMs: redis ? options.pollMs : null,
      closeTimeout: options.closeTimeout,
      handlerTimeout: options.handlerTimeout,
    });
    this.#opened = backend.open();
    // Surfaced by the first request or call, not as an unhandled rejection now.
    this.#opened.catch((error: unknown) => runner.onError(error));
    void this.#opened.then(() => this.#runner.kick(), () => undefined);
  }

  /** Names the file or Redis the inbox lives in. */
  get where(): string {
    return this.#backend.where;
  }

  /** Records, newest first. */
  async list({ state, limit = 100 }: InboxListOptions = {}): Promise<InboxRecord[]> {
    if (state !== undefined && !INBOX_STATES.includes(state)) throw new TypeError(`Expected \`state\` to be one of ${INBOX_STATES.join(', ')}, got ${JSON.stringify(state)}.`);
    if (!(Number.isSafeInteger(limit) && limit > 0)) throw new TypeError(`Expected \`limit\` to be a positive integer, got ${limit}.`);
    await this.#opened;
    return this.#backend.list(state, limit);
  }

  /** One record by its id (the delivery id), or `undefined`. */
  async get(id: string): Promise<InboxRecord | undefined> {
    await this.#opened;
    return this.#backend.get(id);
  }

  /**
   * Runs a dead or done event again (`context.source === 'replay'`, attempts from 1): after a fix, say.
   * Throws `InboxError` (`inbox_record_not_found`, `inbox_not_replayable`) otherwise.
   */
  async replay(id: string): Promise<InboxRecord> {
    await this.#opened;
    const record = await this.#backend.replay(id, this.#clock());
    this.#runner.kick();
    return record;
  }

  /** Drops dead or done records that finished before `before`; answers how many. */
  async purge({ state, before = this.#clock() }: InboxPurgeOptions): Promise<number> {
    if (state !== 'dead' && state !== 'done') throw new TypeError(`Expected \`state\` to be dead or done (pending and running events are never dropped), got ${JSON.stringify(state)}.`);
    const at = before instanceof Date ? before.getTime() : before;
    if (!Number.isFinite(at)) throw new TypeError(`Expected \`before\` to be a Date or milliseconds since the epoch, got ${String(before)}.`);
    await this.#opened;
    return this.#backend.purge(state, at);
  }

  /** Records per state. */
  async stats(): Promise<InboxStats> {
    await this.#opened;
    return this.#backend.stats();
  }

  /**
   * Resolves once this process's inbox has nothing in flight: no look for due events, no handler running,
   * no outcome or lease renewal still being written. Events waiting for their next try, or for a handler
   * to be registered, do not count. It tells a test (or a shutdown script) that the work it started has
   * finished, so it can then assert what did *not* happen without sleeping. On a Redis inbox it speaks for
   * this process only: another may take an event the next moment.
   * @param options.handlers `false` to wait for the inbox's own work only (looking, writing, renewing) while
   * handlers go on running: what a `SimulatedClock`'s `settleWith()` waits for between two timers. @default true
   * @example
   * await clock.advance(60_000); // a retry falls due and runs
   * await receiver.inbox!.idle();
   * expect(await receiver.inbox!.stats()).toMatchObject({ pending: 0, running: 0 });
   */
  async idle({ handlers = true }: InboxIdleOptions = {}): Promise<void> {
    if (typeof handlers !== 'boolean') throw new TypeError(`Expected \`handlers\` to be a boolean, got ${JSON.stringify(handlers)}.`);
    await this.#opened;
    await this.#runner.idle(handlers);
  }

  /** @internal The receiver's durable write of a first-seen event. */
  async enqueue(record: InboxRecord): Promise<AddOutcome> {
    if (this.#closed) throw new Error('The receiver is closing: the inbox takes no more events.');
    await this.#opened;
    const added = await this.#backend.add(record, this.#maxPending, this.#maxPendingBytes);
    if (added === 'added') this.#runner.kick();
    return added;
  }

  /** @internal A handler was registered: events waiting for one may run. */
  kick(): void {
    this.#runner.kick();
  }

  /** @internal Stops taking events, lets running handlers finish (up to `closeTimeout`), closes the back end. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.#opened.catch(() => undefined);
      await this.#runner.close();
      await this.#backend.close();
    })();
    return this.#closed;
  }
}
