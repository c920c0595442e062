import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { InvalidPayloadError, VIDEO_ERROR_CODES, parseEvent } from '../../src/index.js';
import { completedEvent, failedEvent } from '../helpers/webhooks.js';

const template = (name: string) => JSON.parse(readFileSync(new URL(`../../templates/events/${name}.json`, import.meta.url), 'utf8'));

describe('parseEvent', () => {
  it('accepts both templates as shipped', () => {
    expect(parseEvent(template('video.completed')).event).toBe('video.completed');
    expect(parseEvent(template('video.failed')).event).toBe('video.failed');
  });

  it('returns the event typed by its name, keeping unknown members', () => {
    const event = parseEvent({ ...completedEvent({ id: 5 }), extra: 'kept' });
    if (event.event !== 'video.completed') throw new Error('narrowing');
    expect(event.video_url).toBe('https://app.example.com/videos/1');
    expect((event as unknown as { extra: string }).extra).toBe('kept');
  });

  it('accepts every error code of spec 2.9 on video.failed', () => {
    expect(VIDEO_ERROR_CODES).toHaveLength(13);
    for (const code of VIDEO_ERROR_CODES) expect(parseEvent(failedEvent({ error_code: code })).event).toBe('video.failed');
  });

  it.each([
    ['not an object', [], ''],
    ['null', null, ''],
    ['an unknown event', { ...completedEvent(), event: 'video.deleted' }, 'event'],
    ['a string id', { ...completedEvent(), id: '5' }, 'id'],
    ['an id above 2^53', { ...completedEvent(), id: 2 ** 53 + 2 }, 'id'],
    ['negative credits', { ...completedEvent(), credits_used: -1 }, 'credits_used'],
    ['a completed clip without a url', { ...completedEvent(), video_url: null }, 'video_url'],
    ['a completed clip with status error', { ...completedEvent(), status: 'error' }, 'status'],
    ['a failed clip without a code', { ...failedEvent(), error_code: null }, 'error_code'],
    ['no delivered_at', { ...completedEvent(), delivered_at: undefined }, 'delivered_at'],
    ['a bad date', { ...completedEvent(), created_at: 'yesterday' }, 'created_at'],
  ])('refuses %s with InvalidPayloadError naming the field', (_name, value, field) => {
    let caught: unknown;
    try {
      parseEvent(value);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidPayloadError);
    expect((caught as InvalidPayloadError).code).toBe('invalid_payload');
    expect((caught as InvalidPayloadError).field).toBe(field);
  });
});
