/** One JSON answer the service wrote: what the request asked, and what it got. */
export interface Answer {
  method: string;
  /** The request's path, without its query. */
  path: string;
  status: number;
  contentType: string;
  body: unknown;
}

const taps = new Set<(answer: Answer) => void>();

/**
 * Observes every JSON answer the service writes (the test suite checks each one against the OpenAPI
 * document, so coverage grows with the suite). Returns how to stop. Nothing observes in production, and
 * an empty set costs one size check per answer.
 * @example const stop = tapAnswers((answer) => seen.push(answer));
 */
export function tapAnswers(tap: (answer: Answer) => void): () => void {
  taps.add(tap);
  return () => void taps.delete(tap);
}

/** @internal Called by the router for each answer. */
export function observe(make: () => Answer): void {
  if (taps.size === 0) return;
  const answer = make();
  for (const tap of taps) tap(answer);
}
