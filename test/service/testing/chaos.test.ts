import { describe, expect, it } from 'vitest';
import { bodyAt } from '../../../src/emitter/attempt.js';
import { RETRY_SCHEDULE_MS, MAX_ATTEMPTS } from '../../../src/protocol/schedule.js';
import { sign } from '../../../src/protocol/signature.js';
import { MemoryDeliveryStore, Receiver } from '../../../src/receiver/index.js';
import { freshEvent } from '../../../src/receiver/test-webhook.js';
import { startService } from '../../../src/service/http/app.js';
import { attemptOutcome, batchRelease, chaosModesOf, combineModes, knownModes, LATE_BACKDATE_MS, planAttempt, RECEIVER_WINDOW_MS, type AttemptPlan, type ChaosMode } from '../../../src/service/testing/chaos.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');

describe('chaos modes from prompts and accounts', () => {
  it('reads simulate:webhook_… markers, in the order of the modes, and ignores ones that name none', () => {
    expect(chaosModesOf('a fox simulate:webhook_late simulate:webhook_duplicate simulate:webhook_late')).toEqual(['webhook_duplicate', 'webhook_late']);
    expect(chaosModesOf('simulate:webhook_sideways and simulate:upstream_timeout')).toEqual([]);
    // An account's modes as core keeps them (plain strings, maybe from a hand-edited data file): the known ones, in their order.
    expect(knownModes(['webhook_late', 'webhook_sideways', 'webhook_duplicate'])).toEqual(['webhook_late', 'webhook_duplicate']);
    expect(chaosModesOf('xsimulate:webhook_cut, simulate:webhook_cut_more')).toEqual([]);
    expect(chaosModesOf('(simulate:webhook_cut)')).toEqual(['webhook_cut']);
    expect(chaosModesOf(null)).toEqual([]);
    expect(combineModes(['webhook_late'], ['webhook_previous_secret', 'webhook_late'], [])).toEqual(['webhook_late', 'webhook_previous_secret']);
  });

  // Issue 29 item 18: svc.webhookChaos answered ['webhook_duplicate', 'webhook_late'] to ['webhook_late', 'webhook_duplicate'].
  it('keeps the modes in the order sent, each once: combineModes and what svc.webhookChaos answers', async () => {
    expect(combineModes(['webhook_late', 'webhook_duplicate', 'webhook_late'])).toEqual(['webhook_late', 'webhook_duplicate']);
    const svc = await startService();
    try {
      const sent: ChaosMode[] = ['webhook_previous_secret', 'webhook_late', 'webhook_duplicate', 'webhook_late'];
      expect(await svc.webhookChaos({ account: 1, modes: sent })).toEqual({ object: 'webhook_chaos', account: 1, modes: ['webhook_previous_secret', 'webhook_late', 'webhook_duplicate'] });
    } finally {
      await svc.close();
    }
  });
});

describe('planAttempt: the sends of one attempt', () => {
  const plan = (modes: ChaosMode[], attempt = 1, hasPreviousSecret = true) => planAttempt({ modes, attempt, hasPreviousSecret });
  const ordinary = { timing: 'first', secret: 'current', backdateMs: 0, deliveryId: 'same', answer: 'decides', mode: null };

  it('is one ordinary send without modes, and on every retry but for the secret', () => {
    expect(plan([])).toEqual({ sends: [ordinary], skipped: [] });
    expect(plan(['webhook_duplicate', 'webhook_concurrent', 'webhook_cut', 'webhook_late'], 2).sends).toEqual([ordinary]);
    expect(plan(['webhook_previous_secret'], 4).sends).toEqual([{ ...ordinary, secret: 'previous', mode: 'webhook_previous_secret' }]);
  });

  it('duplicate: the same delivery again once answered; concurrent: at the same instant; late: a copy with a fresh id, backdated past the window', () => {
    expect(plan(['webhook_duplicate']).sends).toEqual([ordinary, { ...ordinary, timing: 'after_previous', answer: 'ignored', mode: 'webhook_duplicate' }]);
    expect(plan(['webhook_concurrent']).sends).toEqual([ordinary, { ...ordinary, timing: 'with_first', mode: 'webhook_concurrent' }]);
    const late = plan(['webhook_late']).sends[1]!;
    expect(late).toEqual({ ...ordinary, timing: 'after_previous', backdateMs: LATE_BACKDATE_MS, deliveryId: 'fresh', answer: 'ignored', mode: 'webhook_late' });
    expect(late.backdateMs).toBeGreaterThan(RECEIVER_WINDOW_MS);
  });

  it('cut: the first attempt’s answers are discarded (its concurrent copy too), so the schedule sends it again', () => {
    expect(plan(['webhook_cut', 'webhook_concurrent']).sends.map((send) => send.answer)).toEqual(['discarded', 'discarded']);
    expect(plan(['webhook_cut', 'webhook_duplicate']).sends.map((send) => send.answer)).toEqual(['discarded', 'ignored']);
  });

  it('previous secret: signs every send with the secret before the last rotation, or says why it cannot', () => {
    expect(plan(['webhook_previous_secret', 'webhook_duplicate']).sends.map((send) => send.secret)).toEqual(['previous', 'previous']);
    expect(plan(['webhook_previous_secret'], 1, false)).toEqual({ sends: [ordinary], skipped: [{ mode: 'webhook_previous_secret', reason: 'The key’s webhook secret was never rotated: there is no previous secret, so the current one signs.' }] });
  });

  it('attemptOutcome: delivered on a deciding 2xx, permanent on a deciding 4xx, else retried; discarded and ignored answers never decide', () => {
    const concurrent = plan(['webhook_concurrent']);
    expect(attemptOutcome(concurrent, [200, 503])).toBe('delivered');
    expect(attemptOutcome(concurrent, [503, 200])).toBe('delivered');
    expect(attemptOutcome(concurrent, [401, 503])).toBe('permanent');
    expect(attemptOutcome(concurrent, [500, new Error('reset')])).toBe('retry');
    expect(attemptOutcome(plan(['webhook_cut']), [200])).toBe('retry');
    expect(attemptOutcome(plan(['webhook_duplicate']), [500, 200])).toBe('retry');
    expect(() => attemptOutcome(concurrent, [200])).toThrow('Expected one reply per send (2), got 1.');
    expect(() => plan([], 0)).toThrow(TypeError);
  });
});

describe('batchRelease: a batch’s webhooks in reverse order of completion', () => {
  it('waits for every clip that will send one, then the last to end first (ties: the later item first)', () => {
    expect(batchRelease([{ clipId: 1, endedAt: T0, sendsWebhook: true }, { clipId: 2, endedAt: null, sendsWebhook: true }])).toEqual({ ready: false, waitingFor: [2] });
    expect(batchRelease([
      { clipId: 1, endedAt: T0 + 50, sendsWebhook: true },
      { clipId: 2, endedAt: T0 + 90, sendsWebhook: true },
      { clipId: 3, endedAt: null, sendsWebhook: false },
      { clipId: 4, endedAt: T0 + 10, sendsWebhook: true },
      { clipId: 5, endedAt: T0 + 50, sendsWebhook: true },
    ])).toEqual({ ready: true, order: [2, 5, 1, 4] });
  });
});

/**
 * A sender that makes a delivery as the plan says, against cliphook's own receiver on the same clock:
 * the attempt, its copies, and the schedule's retries while the attempt is not delivered (spec 6.4).
 */
async function deliver(modes: ChaosMode[], { secrets = ['whsec_current_0123456789', 'whsec_previous_0123456789'], tolerance = 300 as number | false } = {}) {
  let now = T0;
  let handled = 0;
  const replies: Array<{ attempt: number; status: number; code: string | undefined }> = [];
  const receiver = new Receiver({ secret: secrets, tolerance, clock: () => now, store: new MemoryDeliveryStore({ clock: () => now }) });
  receiver.on('video.completed', async () => {
    handled++;
    await new Promise((resolve) => setImmediate(resolve));
  });
  const payload = JSON.stringify(freshEvent('video.completed', T0));
  const send = async (plan: AttemptPlan, index: number) => {
    const planned = plan.sends[index]!;
    const body = bodyAt(payload, now - planned.backdateMs);
    const headers = {
      'content-type': 'application/json', 'x-service-event': 'video.completed',
      'x-service-delivery': planned.deliveryId === 'same' ? 'dlv_chaos_0001' : 'dlv_chaos_0001_copy',
      'x-service-signature': sign(body, planned.secret === 'current' ? 'whsec_current_0123456789' : 'whsec_previous_0123456789'),
    };
    return receiver.receive(new TextEncoder().encode(body), headers);
  };
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const plan = planAttempt({ modes, attempt, hasPreviousSecret: true });
    const answers: Array<ReturnType<typeof send>> = [];
    for (const [index, planned] of plan.sends.entries()) {
      if (planned.timing === 'after_previous') await answers.at(-1);
      answers.push(send(plan, index));
    }
    const got = await Promise.all(answers);
    for (const reply of got) replies.push({ attempt, status: reply.status, code: (JSON.parse(reply.body) as { code?: string }).code });
    const outcome = attemptOutcome(plan, got.map((reply) => reply.status));
    if (outcome !== 'retry') return { handled, replies, outcome };
    now += RETRY_SCHEDULE_MS[attempt - 1] ?? 0;
  }
  return { handled, replies, outcome: 'exhausted' };
}

describe('every mode against cliphook’s own receiver: the handler runs exactly once', () => {
  it('duplicate: the copy is answered 200 duplicate by the X-Service-Delivery dedupe', async () => {
    expect(await deliver(['webhook_duplicate'])).toEqual({ handled: 1, outcome: 'delivered', replies: [{ attempt: 1, status: 200, code: undefined }, { attempt: 1, status: 200, code: undefined }] });
  });

  it('concurrent: the copy finds the first in progress and is told to come back (503 delivery_in_progress)', async () => {
    const run = await deliver(['webhook_concurrent']);
    expect(run).toMatchObject({ handled: 1, outcome: 'delivered' });
    expect(run.replies.map((reply) => [reply.status, reply.code])).toEqual([[200, undefined], [503, 'delivery_in_progress']]);
  });

  it('cut: the first answer is lost, the schedule sends it again 30 s later, and the receiver acknowledges it as a duplicate', async () => {
    const run = await deliver(['webhook_cut']);
    expect(run).toMatchObject({ handled: 1, outcome: 'delivered' });
    expect(run.replies.map((reply) => reply.attempt)).toEqual([1, 2]);
  });

  it('late: the backdated copy under a fresh delivery id is refused 400 stale_delivery by the replay window', async () => {
    const run = await deliver(['webhook_late']);
    expect(run).toMatchObject({ handled: 1, outcome: 'delivered' });
    expect(run.replies[1]).toEqual({ attempt: 1, status: 400, code: 'stale_delivery' });
    // Without the window, the dedupe of the signed event (not the forged id) still holds it off.
    const open = await deliver(['webhook_late'], { tolerance: false });
    expect(open.handled).toBe(1);
    expect(open.replies[1]!.status).toBe(200);
  });

  it('previous secret: a receiver that keeps both secrets through the rotation takes it; one that dropped the old loses the event (401 is permanent)', async () => {
    expect(await deliver(['webhook_previous_secret'])).toMatchObject({ handled: 1, outcome: 'delivered' });
    const dropped = await deliver(['webhook_previous_secret'], { secrets: ['whsec_current_0123456789'] });
    expect(dropped).toMatchObject({ handled: 0, outcome: 'permanent', replies: [{ status: 401, code: 'invalid_signature' }] });
  });

  it('every mode at once', async () => {
    const run = await deliver(['webhook_duplicate', 'webhook_concurrent', 'webhook_cut', 'webhook_late', 'webhook_previous_secret']);
    expect(run).toMatchObject({ handled: 1, outcome: 'delivered' });
    expect(run.replies.some((reply) => reply.code === 'stale_delivery')).toBe(true);
  });
});
