import type { Writable } from 'node:stream';

/**
 * Holds `socket`'s writes until the end of this event-loop turn, so every frame sent to it in one turn
 * leaves in one write. On loopback a write costs a system call that also runs the peer's receive path;
 * at 64 events in flight it was the single largest cost of both relay and listener (bench/relay.ts).
 * Call the returned function before each send; the flush runs in the check phase, right after the poll
 * phase that produced the frames, so no frame waits for a timer.
 */
export function corkPerTurn(socket: Writable): () => void {
  let corked = false;
  const flush = () => {
    corked = false;
    socket.uncork();
  };
  return function corkTurn() {
    if (corked || socket.destroyed) return;
    corked = true;
    socket.cork();
    setImmediate(flush);
  };
}
