import { describe, expect, it } from 'vitest';
import { FileLockedError } from 'cliphook';
import { outboxError } from '../../src/cli/outbox-emitter.js';

describe('outboxError', () => {
  it('says who kept the outbox locked too long, and what to do, with exit 1', () => {
    const holder = { pid: 4242, hostname: 'dev-box', since: '2026-11-23T18:00:00.000Z', touchedAt: '2026-11-23T18:00:00.000Z' };
    const error = outboxError('.cliphook/outbox.json', new FileLockedError('/abs/.cliphook/outbox.json', 'cliphook outbox', holder, Date.now()));
    expect(error.exitCode).toBe(1);
    expect(error.message).toBe(
      'cannot use the outbox: .cliphook/outbox.json stayed locked for 10 s by process 4242 on dev-box (since 2026-11-23T18:00:00.000Z); ' +
        'a cliphook command holds it only while it writes, so that process is stuck or paused: resume or stop it, or use another --outbox',
    );
    expect(outboxError('o.json', new Error('boom')).message).toBe('cannot use the outbox: boom');
  });
});
