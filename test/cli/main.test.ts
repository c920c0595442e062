import { describe, expect, it } from 'vitest';
import { version } from '../../src/version.js';
import { cli } from './helpers.js';

describe('cli entry', () => {
  it('prints the version and exits 0', async () => {
    const result = await cli('--version');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(version);
  });

  it('prints the help of a command on --help and exits 0', async () => {
    const result = await cli('trigger', '--help');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: cliphook trigger');
    expect(result.stderr).toBe('');
  });

  // Issue 29 item 18: --methods and --events said "(default POST)" or nothing, then "(default: [])".
  it('lists one default per option in `listen --help`: POST for --methods, every event for --events', async () => {
    const { code, stdout } = await cli('listen', '--help');
    expect(code).toBe(0);
    const help = stdout.replace(/\s+/g, ' ');
    expect(help).not.toContain('(default: [])');
    const option = (flag: string) => help.slice(help.indexOf(flag), help.indexOf(' --', help.indexOf(flag) + flag.length));
    expect(option('--methods <methods>').match(/default/g)).toHaveLength(1);
    expect(option('--methods <methods>')).toContain('(default: POST)');
    expect(option('--events <names>')).toContain('(default: every event)');
  });

  it('lists one default for --set in `trigger --help`, not a second "(default: [])"', async () => {
    const { code, stdout } = await cli('trigger', '--help');
    expect(code).toBe(0);
    const help = stdout.replace(/\s+/g, ' ');
    expect(help).not.toContain('(default: [])');
    expect(help).toContain('(default: none)');
  });

  it.each([
    [['frobnicate'], "cliphook: unknown command 'frobnicate' (see cliphook --help)"],
    [['trigger', 'video.completed', '--nope'], "cliphook: unknown option '--nope' (see cliphook trigger --help)"],
    [['trigger'], "cliphook: missing required argument 'event' (see cliphook trigger --help)"],
    [['trigger', 'video.completed', '--url'], "cliphook: option '--url <url>' argument missing (see cliphook trigger --help)"],
    [['deliveries', 'show'], "cliphook: missing required argument 'id' (see cliphook deliveries show --help)"],
    [['deliveries', 'frob'], "cliphook: unknown command 'frob' (see cliphook deliveries --help)"],
    [['deliveries', 'list', 'extra'], /^cliphook: too many arguments for 'list'\. .* \(see cliphook deliveries list --help\)$/],
    [['trigger', 'video.completed', '--ur', 'x'], /^cliphook: unknown option '--ur' \(Did you mean --url\?\) \(see cliphook trigger --help\)$/],
  ])('answers a usage error %j with one line and exit 2', async (args, message) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    const lines = result.stderr.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    if (typeof message === 'string') expect(lines[0]).toBe(message);
    else expect(lines[0]).toMatch(message);
    expect(result.stdout).toBe('');
  });

  it('shows the commands, on stderr with exit 2, when none is given', async () => {
    const result = await cli();
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Usage: cliphook');
  });
});
