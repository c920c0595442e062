/**
 * Where the service answers: its origin, read where a link or a problem names it. It is known only once the
 * server listens (port 0), so a part keeps the holder and reads `site.origin` when it needs it; the Service is
 * the holder (a field read, not a closure of the wiring called on every request).
 */
export interface Site {
  readonly origin: string;
}
