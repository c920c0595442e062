import { AsyncLocalStorage } from 'node:async_hooks';

// Issue 31 (speed): on Node 20 every AsyncLocalStorage that has run costs each promise made afterwards its
// own propagation (about 70 ns here), and a POST /v1/videos makes about 46 promises. The clock's account and
// the store's unit of work were two instances; they are two slots of this one.

/** One link of the context: a slot's value, over the context it was set in. */
interface Frame {
  readonly slot: ContextSlot<unknown>;
  readonly value: unknown;
  readonly parent: Frame | undefined;
}

const storage = new AsyncLocalStorage<Frame>();

/**
 * One value carried through a request's (or a timer's) async calls, as an `AsyncLocalStorage` carries its
 * store, on the one storage every slot shares. Setting a slot keeps the others as they are.
 * @example
 * const unit = new ContextSlot<{ open: boolean }>();
 * await unit.run({ open: true }, async () => { await 0; unit.get(); }); // { open: true }
 */
export class ContextSlot<T> {
  /** The value of the innermost `run` of this slot around the caller; `undefined` outside every one. */
  get(): T | undefined {
    // As deep as the runs nested around the caller (a request's: two or three), never longer with time.
    for (let frame = storage.getStore(); frame !== undefined; frame = frame.parent) {
      if (frame.slot === this) return frame.value as T | undefined;
    }
    return undefined;
  }

  /** Runs `fn` with this slot set to `value` (`undefined`: as outside every run), the other slots as they are. */
  run<R>(value: T | undefined, fn: () => R): R {
    return storage.run({ slot: this as ContextSlot<unknown>, value, parent: storage.getStore() }, fn);
  }
}
