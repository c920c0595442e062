// Queued journal lines and their encoding into the few buffers one write takes.

/**
 * One queued line (JSON, no newline), or a function that makes it when it is written (and gives `null` when
 * its change was undone meanwhile); `text` becomes `null` when its change was undone before it reached the file.
 */
export interface QueuedLine {
  text: string | (() => string | null) | null;
}

/** The first buffer of a write, and the most any later one starts with: each is twice the one before. */
const FIRST_PIECE_BYTES = 16 * 1024;
const MAX_PIECE_BYTES = 1024 * 1024;

/**
 * The lines, each followed by a newline, as UTF-8 in a few buffers (written together, with one writev); a
 * line made by a function is made here. A full buffer is kept and a larger one started: growing one buffer
 * by doubling would copy a busy second's lines (a few MB) several times over.
 */
export function encodeLines(lines: readonly QueuedLine[]): { pieces: Buffer[]; bytes: number } {
  const pieces: Buffer[] = [];
  let bytes = 0;
  let out: Buffer | null = null;
  let at = 0;
  for (const line of lines) {
    if (line.text === null) continue;
    const text = typeof line.text === 'string' ? line.text : line.text();
    if (text === null) continue;
    // A UTF-16 code unit takes at most 3 bytes in UTF-8, and the newline 1.
    const needed = text.length * 3 + 1;
    if (out === null || at + needed > out.length) {
      if (out !== null && at > 0) pieces.push(out.subarray(0, at));
      const next = out === null ? FIRST_PIECE_BYTES : Math.min(out.length * 2, MAX_PIECE_BYTES);
      out = Buffer.allocUnsafe(Math.max(needed, next));
      at = 0;
    }
    const written = out.write(text, at) + 1;
    out[at + written - 1] = 0x0a;
    at += written;
    bytes += written;
  }
  if (out !== null && at > 0) pieces.push(out.subarray(0, at));
  return { pieces, bytes };
}
