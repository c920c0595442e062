// Child processes of a benchmark, over IPC: each answers `stats` (its CPU time, memory and peak RSS) and,
// with BENCH_PROFILE set, `profile-start` / `profile-stop` (a CPU profile of the measured window only).
// Not a benchmark (`bench/run.ts` reads only the top folder).
import { fork, type ChildProcess } from 'node:child_process';
import { PerformanceObserver } from 'node:perf_hooks';
import { windowProfiler } from '../lib.js';

export interface Stats {
  /** CPU time so far, read before the collection below: where a measured window ends. */
  cpu: NodeJS.CpuUsage;
  /** CPU time so far, read after it: where a measured window starts, so the bench's own gc() is in no window. */
  cpuAfterGc: NodeJS.CpuUsage;
  memory: NodeJS.MemoryUsage;
  /** Peak resident set size so far, in bytes. */
  maxRss: number;
  /** Milliseconds spent in garbage collection pauses so far (the bench's own forced collections left out). */
  gcMs: number;
}

type Command = 'stats' | 'cpu' | 'profile-start' | 'profile-stop';
type Reply = { stats: Stats } | { cpu: NodeJS.CpuUsage } | { done: Command };

/**
 * In the child: answers the parent's commands. `profile` names the profile file. `stats` reads the CPU time,
 * then runs a GC (the children run with --expose-gc) so the heap figure is what is held, not garbage.
 */
export function answerParent(profile: string): void {
  const profiler = windowProfiler(profile);
  // Pauses of the collector on the main thread, as perf_hooks reports them; the bench's own gc() is subtracted.
  let gcMs = 0;
  let forcedMs = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  }).observe({ entryTypes: ['gc'] });
  process.on('message', (command: Command) => {
    const reply = (message: Reply) => process.send!(message);
    if (command === 'stats') {
      // The CPU time first: the full collection below is the bench's, not the events' (on the relay, with a
      // thousand events kept per channel, it took 30-40 ms, a few percent of a burst's CPU).
      const cpu = process.cpuUsage();
      const collected = gcMs - forcedMs;
      const started = performance.now();
      globalThis.gc?.();
      forcedMs += performance.now() - started;
      return reply({ stats: { cpu, cpuAfterGc: process.cpuUsage(), memory: process.memoryUsage(), maxRss: process.resourceUsage().maxRSS * 1024, gcMs: collected } });
    }
    // The CPU time alone, no collection: to poll a child until it has gone quiet.
    if (command === 'cpu') return reply({ cpu: process.cpuUsage() });
    void (command === 'profile-start' ? profiler.start() : profiler.stop()).then(() => reply({ done: command }));
  });
  // Exit normally when the bench is done, so a profile or an exit hook gets to write.
  process.on('SIGTERM', () => process.exit(0));
}

export interface Child {
  name: string;
  process: ChildProcess;
  stats(): Promise<Stats>;
  /** CPU µs (user + system) used so far, without the collection `stats` runs. */
  cpu(): Promise<number>;
  command(command: Command): Promise<void>;
}

/**
 * Forks `script --role <role> ...args` and resolves once it is ready: its first IPC message, or, with
 * `readyLine`, the first stdout line that matches (stdout is piped and drained, as a terminal would take it).
 * BENCH_NODE_FLAGS passes more flags to node (`--cpu-prof`, `--max-old-space-size=…`).
 */
export function forkRole(script: string, role: string, args: string[], options: { readyLine?: RegExp; name?: string } = {}): Promise<{ child: Child; first: Record<string, unknown> }> {
  const extra = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const child = fork(script, ['--role', role, ...args], {
    execArgv: ['--import', 'tsx', '--expose-gc', ...extra],
    stdio: options.readyLine ? ['ignore', 'pipe', 'inherit', 'ipc'] : ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const queue: Array<(reply: Reply) => void> = [];
  const wrapped: Child = {
    name: options.name ?? role,
    process: child,
    stats: () => ask<Stats>(child, queue, 'stats', (reply) => (reply as { stats: Stats }).stats),
    cpu: () => ask<number>(child, queue, 'cpu', (reply) => {
      const { user, system } = (reply as { cpu: NodeJS.CpuUsage }).cpu;
      return user + system;
    }),
    command: (command) => ask(child, queue, command, () => undefined),
  };
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
    if (options.readyLine) {
      let seen = '';
      let ready = false;
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        if (ready) return;
        seen = (seen + chunk).slice(-4096);
        if (options.readyLine!.test(seen)) {
          ready = true;
          resolve({ child: wrapped, first: {} });
        }
      });
      child.on('message', (reply: Reply) => queue.shift()?.(reply));
    } else {
      child.once('message', (first: Record<string, unknown>) => {
        child.on('message', (reply: Reply) => queue.shift()?.(reply));
        resolve({ child: wrapped, first });
      });
    }
  });
}

function ask<T>(child: ChildProcess, queue: Array<(reply: Reply) => void>, command: Command, pick: (reply: Reply) => T): Promise<T> {
  return new Promise((resolve) => {
    queue.push((reply) => resolve(pick(reply)));
    child.send(command);
  });
}

/**
 * CPU microseconds (user + system) a process spent between two stats, per event: from after the first one's
 * collection to before the second one's, so neither of the bench's own collections is counted (each one is
 * a full GC: 10-40 ms on a relay or an inspector holding thousands of events).
 */
export function cpuPerEvent(before: Stats, after: Stats, events: number): number {
  const used = (cpu: NodeJS.CpuUsage) => cpu.user + cpu.system;
  return (used(after.cpu) - used(before.cpuAfterGc)) / events;
}

/** Runs `command` in every child at once. */
export async function all(children: readonly Child[], command: Command): Promise<void> {
  await Promise.all(children.map((child) => child.command(command)));
}
