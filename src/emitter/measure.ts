/**
 * Parts of the emitter that bench/emitter-bullmq.ts turns off, one at a time and in a process of its own,
 * to measure what each costs by toggling them, not by guessing. Never changed in use:
 * each one off gives up something the emitter promises — `mirror`: this process no longer sees the other
 * processes' deliveries in `get()` and `list()`; `jobOptions`: a retry no longer waits for its slot of the
 * schedule, and finished jobs stay in Redis; `replyBody`: an attempt no longer keeps the start of the reply.
 * Not exported from the package.
 */
export const measured = {
  /** The BullMQ engine subscribes to the queue's changes and keeps every process's records. */
  mirror: true,
  /** BullMQ jobs carry their options: delay, attempts and the schedule's backoff, removal once done. */
  jobOptions: true,
  /** The transport reads the reply body and keeps its first KiB for the attempt log. */
  replyBody: true,
};
