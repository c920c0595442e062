import { AsyncLocalStorage } from 'node:async_hooks';

// One AsyncLocalStorage for every slot: on Node 20 each one that has run costs each promise made afterwards
// its own propagation (about 70 ns here), and a POST /v1/videos makes about 46 promises. So the clock's
// account and the store's unit of work are two slots of this one instance, not two instances.

/**
 * The slots set around the caller and their values, side by side. Flat: a run copies the frame it is made
 * in (as many entries as slots are set there: one or two), so a lookup never walks a chain, however many
 * runs nest (a polling loop re-entering `clock.as` forever included).
 */
interface Frame {
  readonly slots: readonly ContextSlot<unknown>[];
  readonly values: readonly unknown[];
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
    const frame = storage.getStore();
    if (frame === undefined) return undefined;
    const at = frame.slots.indexOf(this as ContextSlot<unknown>);
    return at === -1 ? undefined : (frame.values[at] as T | undefined);
  }

  /** Runs `fn` with this slot set to `value` (`undefined`: as outside every run), the other slots as they are. */
  run<R>(value: T | undefined, fn: () => R): R {
    const frame = storage.getStore();
    const slot = this as ContextSlot<unknown>;
    if (frame === undefined) return storage.run({ slots: [slot], values: [value] }, fn);
    const at = frame.slots.indexOf(slot);
    if (at === -1) return storage.run({ slots: [...frame.slots, slot], values: [...frame.values, value] }, fn);
    const values = frame.values.slice();
    values[at] = value;
    return storage.run({ slots: frame.slots, values }, fn);
  }
}
