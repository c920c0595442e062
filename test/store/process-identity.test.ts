// What a lock records of its holder, and how another process tells whether that holder still runs.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseProcStat, place, procStat, running, samePlace } from '../../src/store/process-identity.js';

describe('process identity', () => {
  it('reads the state and start time of /proc/<pid>/stat, whatever the command name holds', () => {
    const rest = (state: string) => `${state} 1 2 3 0 -1 4194560 5 0 0 0 1 2 0 0 20 0 1 0 123456 1000 200`;
    expect(parseProcStat(`4242 (node) ${rest('S')}`)).toEqual({ state: 'S', started: 123456 });
    expect(parseProcStat(`4242 (a) b (c) ${rest('Z')}`)).toEqual({ state: 'Z', started: 123456 });
    expect(parseProcStat('4242 (node) Z')).toEqual({ state: 'Z', started: null });
    expect(parseProcStat('garbage')).toBeNull();
  });

  it('compares pids only within one host, boot and pid namespace', () => {
    const here = place();
    expect(samePlace(here, { ...here })).toBe(true);
    expect(samePlace(here, { ...here, hostname: `${here.hostname}-other` })).toBe(false);
    expect(samePlace(here, { ...here, pidNamespace: 'pid:[1]' === here.pidNamespace ? 'pid:[2]' : 'pid:[1]' })).toBe(false);
  });

  it('says this process runs, a reused pid (another start time) does not, and an exited one does not', () => {
    const since = new Date().toISOString();
    const started = procStat(process.pid)?.started ?? null;
    expect(running({ pid: process.pid, started, since })).toBe(true);
    if (started !== null) expect(running({ pid: process.pid, started: started + 1, since })).toBe(false);
    const exited = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    expect(running({ pid: Number(exited.stdout), started: null, since })).toBe(false);
  });
});
