// The inspector's server-sent events say when pages watch, so listen makes no rows while none does (issue 23).
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { EventStream } from '../../src/inspector/event-stream.js';

function page() {
  const req = new EventEmitter() as IncomingMessage;
  const written: string[] = [];
  const res = Object.assign(new EventEmitter(), {
    writableLength: 0,
    writeHead: () => res,
    write: (text: string) => (written.push(text), true),
    end: () => undefined,
    destroy: () => undefined,
  }) as unknown as ServerResponse;
  return { req, res, written, leave: () => req.emit('close') };
}

describe('EventStream', () => {
  it('says when the first page comes and when the last one goes, and sends only while one watches', () => {
    const watching: boolean[] = [];
    const stream = new EventStream({ onWatch: (on) => watching.push(on) });
    const one = page();
    const two = page();
    stream.open(one.req, one.res, {});
    stream.open(two.req, two.res, {});
    expect(watching).toEqual([true]);
    stream.send('exchange', { id: 1 });
    expect(one.written.at(-1)).toBe('event: exchange\ndata: {"id":1}\n\n');
    one.leave();
    two.leave();
    two.leave();
    expect(watching).toEqual([true, false]);
    stream.open(one.req, one.res, {});
    stream.close();
    expect(watching).toEqual([true, false, true, false]);
  });
});
