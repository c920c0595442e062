import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

// Which process is which across machines, containers and reused pids: what a lock file records of its
// holder and how another process tells whether that holder still runs (file-lock.ts reads it).

/** Where a process runs: the same host, boot and pid namespace make pids comparable. */
export interface Place {
  hostname: string;
  /** Linux: this boot's id; `null` elsewhere. */
  boot: string | null;
  /** Linux: the pid namespace (containers on one host have their own); `null` elsewhere. */
  pidNamespace: string | null;
}

let here: Place | undefined;

/** Where this process runs (read once). */
export function place(): Place {
  here ??= { hostname: hostname(), boot: readText('/proc/sys/kernel/random/boot_id'), pidNamespace: readLink('/proc/self/ns/pid') };
  return here;
}

/** Whether two records name the same host, boot and pid namespace: only then do their pids compare. */
export function samePlace(a: Place, b: Place): boolean {
  return a.hostname === b.hostname && a.boot === b.boot && a.pidNamespace === b.pidNamespace;
}

/** A process as a lock records it: its pid, its start time (Linux) and when it took the lock. */
export interface ProcessMark {
  pid: number;
  /** Linux: the process's start time in clock ticks since boot, which a reused pid does not share. */
  started: number | null;
  /** ISO 8601. */
  since: string;
}

/** Whether the process `body` marks (on this machine) still runs: its pid, and its start time where known. */
export function running(body: ProcessMark): boolean {
  try {
    process.kill(body.pid, 0);
  } catch (error) {
    // EPERM: it exists, under another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = procStat(body.pid);
  // A zombie (killed, not yet reaped by its parent) still answers kill(0), yet will never write again.
  if (stat !== null && (stat.state === 'Z' || stat.state === 'X')) return false;
  const started = stat?.started ?? null;
  if (body.started !== null && started !== null) return started === body.started; // else a reused pid
  // No start times (not Linux): this process's own pid is a previous life of it (pid 1 in a restarted
  // container) when the lock is older than this process.
  if (body.pid === process.pid) return Date.parse(body.since) >= Date.now() - process.uptime() * 1000 - 1_000;
  return true;
}

/** What `/proc/<pid>/stat` says of a process (Linux; `null` elsewhere or once it is reaped). */
export function procStat(pid: number): ProcStat | null {
  const text = readText(`/proc/${pid}/stat`);
  return text === null ? null : parseProcStat(text);
}

/** The fields of `/proc/<pid>/stat` a lock needs. */
export interface ProcStat {
  /** Field 3: `R`, `S`, `D`, `T` (stopped, still a holder), `Z` (zombie) or `X` (dead)… */
  state: string;
  /** Field 22: the start time in clock ticks after boot, which a reused pid does not share; `null` if unreadable. */
  started: number | null;
}

/** Parses one `/proc/<pid>/stat` line; `null` when it is not one. */
export function parseProcStat(text: string): ProcStat | null {
  // The command name (field 2) may hold spaces and parentheses: count fields after its closing one.
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const fields = text.slice(close + 2).trim().split(' ');
  const state = fields[0];
  if (state === undefined || state === '') return null;
  const started = Number(fields[19]);
  return { state, started: Number.isSafeInteger(started) ? started : null };
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

function readLink(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}
