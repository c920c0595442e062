// Shared helpers for the benchmarks. Not a benchmark itself: `bench/run.ts` skips this file.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TEMPLATES = fileURLToPath(new URL('../templates/events/', import.meta.url));

const templates = new Map<string, Readonly<Record<string, unknown>>>();

/** A template event from `templates/events/<name>.json`, parsed (read once). */
export function template(name: 'video.completed' | 'video.failed'): Readonly<Record<string, unknown>> {
  let event = templates.get(name);
  if (!event) templates.set(name, (event = Object.freeze(JSON.parse(readFileSync(`${TEMPLATES}${name}.json`, 'utf8')) as Record<string, unknown>)));
  return event;
}

/**
 * A `video.completed` body with its own `id` and a fresh `delivered_at`, as the service sends one.
 * With `size`, the prompt is padded so the body is exactly `size` bytes (the JSON stays valid).
 */
export function eventBody(id: number, size?: number): string {
  const event: Record<string, unknown> = { ...template('video.completed'), id, delivered_at: new Date().toISOString() };
  const body = JSON.stringify(event);
  if (size === undefined || size <= body.length) return body;
  return JSON.stringify({ ...event, prompt: `${event.prompt as string} ${'x'.repeat(size - body.length - 1)}` });
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** `12,345` for counts and rates; two significant decimals below 100. */
export function num(value: number): string {
  if (value >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(2);
}

export function ratio(value: number, base: number): string {
  return `${(value / base).toFixed(2)}×`;
}

/** A GitHub markdown table. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

/** A target line for the report: `met` or `NOT met`, so a reader sees a miss at a glance. */
export function target(label: string, ok: boolean): string {
  return `- ${label}: ${ok ? 'met' : '**NOT met**'}`;
}

/** Parses `--name value` and `--name=value` flags; the rest are positional. */
export function flags(argv = process.argv.slice(2)): { named: Map<string, string>; positional: string[] } {
  const named = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq > 0) named.set(arg.slice(2, eq), arg.slice(eq + 1));
    else if (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) named.set(arg.slice(2), argv[++i]!);
    else named.set(arg.slice(2), 'true');
  }
  return { named, positional };
}

/** A positive integer from `--name` or the environment variable `env`, else `fallback`. */
export function intOption(name: string, env: string, fallback: number): number {
  const raw = flags().named.get(name) ?? process.env[env];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`Expected --${name} (${env}) to be a positive integer, got ${raw}.`);
  return value;
}

/**
 * `BENCH_PROFILE=<dir>`: a CPU profile of this process over the window the bench measures (not its start-up
 * or warm-up), written to `<dir>/<name>.cpuprofile` on `stop()`; read it with `bench/top-frames.ts`, or
 * open it in Chrome DevTools. Without `BENCH_PROFILE`, `start` and `stop` do nothing. With `BENCH_HEAP=1` as
 * well, a sampling allocation profile of the same window, collected objects included, in `<name>.heapprofile`
 * (`bench/top-frames.ts` reads it too: the allocation sites that make the garbage collector work).
 */
export function windowProfiler(name: string): { start(): Promise<void>; stop(): Promise<void> } {
  const dir = process.env.BENCH_PROFILE;
  if (!dir) return { start: async () => undefined, stop: async () => undefined };
  let session: import('node:inspector/promises').Session | null = null;
  return {
    async start() {
      if (session) return;
      const { Session } = await import('node:inspector/promises');
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 250 });
      await session.post('Profiler.start');
      // BENCH_HEAP=1 also samples allocations, the ones GC has since collected included (what makes GC work).
      if (process.env.BENCH_HEAP) {
        await session.post('HeapProfiler.enable');
        await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      }
    },
    async stop() {
      if (!session) return;
      const { profile } = await session.post('Profiler.stop');
      const heap = process.env.BENCH_HEAP ? (await session.post('HeapProfiler.stopSampling')).profile : null;
      session.disconnect();
      session = null;
      const { mkdirSync, writeFileSync } = await import('node:fs');
      mkdirSync(dir, { recursive: true });
      writeFileSync(`${dir}/${name}.cpuprofile`, JSON.stringify(profile));
      if (heap) writeFileSync(`${dir}/${name}.heapprofile`, JSON.stringify(heap));
    },
  };
}
