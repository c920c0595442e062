import { describe, expect, it } from 'vitest';
import type { FailFrame, ReplyFrame } from '../../src/relay/frames.js';
import { Pending, type Outcome } from '../../src/relay/pending.js';

const reply: ReplyFrame = { type: 'reply', seq: 1, status: 200, headers: [], body: Buffer.from('ok') };
const fail = (detail: string): FailFrame => ({ type: 'fail', seq: 1, code: 'local_unreachable', detail });

function pending(listeners: object[]) {
  const ended: Outcome[] = [];
  return { ended, pending: new Pending(listeners, (outcome) => ended.push(outcome)) };
}

describe('Pending: one live event waiting for listeners here and answers from other processes', () => {
  it('ends with the first reply, once, whoever sends it', () => {
    const here = {};
    const { ended, pending: p } = pending([here]);
    p.publishing();
    p.answered({ kind: 'reply', frame: reply });
    p.answered({ kind: 'gone' });
    p.timeout();
    expect(ended).toEqual([{ kind: 'reply', frame: reply }]);
  });

  it('ends only when every listener here and every process that got it has answered; the first fail wins over gone', () => {
    const [one, two] = [{}, {}];
    const { ended, pending: p } = pending([one, two]);
    p.publishing();
    p.gone(one);
    p.answered({ kind: 'fail', frame: fail('elsewhere') }); // before the publish said how many will answer
    p.fail(two, fail('here'));
    expect(ended).toEqual([]);
    p.published(2);
    expect(ended).toEqual([]);
    p.answered({ kind: 'gone' });
    expect(ended).toEqual([{ kind: 'fail', frame: fail('elsewhere') }]);
  });

  it('is gone at once when nobody received it, and ignores listeners it did not wait for', () => {
    const { ended, pending: p } = pending([]);
    expect(p.fail({}, fail('stranger'))).toBe(false);
    p.publishing();
    p.published(0);
    expect(ended).toEqual([{ kind: 'gone' }]);
  });

  it('times out, or is abandoned as gone when the relay stops', () => {
    const first = pending([{}]);
    first.pending.timeout();
    expect(first.ended).toEqual([{ kind: 'timeout' }]);
    const second = pending([{}]);
    second.pending.abandon();
    expect(second.ended).toEqual([{ kind: 'gone' }]);
  });
});
