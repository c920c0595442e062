/**
 * Lines for a stream, written once per event-loop turn: every line printed in one turn leaves in one
 * write. stdout on a pipe or a terminal is synchronous on Linux, so a write is a system call; `listen`
 * prints two lines per event, and at 64 events in flight those calls are its largest single cost
 * (bench/relay.ts). The lines go out in the check phase of the same turn, and whatever is still
 * held when the process exits is written then.
 * @example const out = turnWriter(process.stdout); out('one'); out('two'); // one write: "one\ntwo\n"
 */
export function turnWriter(stream: { write(text: string): unknown }): (line: string) => void {
  let held = '';
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (held === '') return;
    const text = held;
    held = '';
    stream.write(text);
  };
  process.once('exit', flush);
  return (line) => {
    held += `${line}\n`;
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };
}
