// Issue 31 item 4: a handler answers what its route's 2xx schema describes; the compiler refuses anything
// else (`npm run typecheck` checks the @ts-expect-error lines below: each must be an error).
import { describe, expect, expectTypeOf, it } from 'vitest';
import { CreateVideoResponse, Video } from '../../../src/service/contract/video-responses.js';
import type { AnswerOf, Handlers } from '../../../src/service/http/operations.js';
import type { WRITTEN } from '../../../src/service/http/pipeline.js';
import type { z } from 'zod';
import type { Route } from '../../../src/service/contract/routes.js';

type RouteOf<O extends Route['operationId']> = Extract<Route, { operationId: O }>;

describe('typed answers (issue 31 item 4)', () => {
  it('derives each answer from the contract: a clip for getVideo, the 202 body for createVideo, a file for getMedia', () => {
    expectTypeOf<AnswerOf<RouteOf<'getVideo'>>>().toEqualTypeOf<z.input<typeof Video>>();
    expectTypeOf<AnswerOf<RouteOf<'createVideo'>>>().toEqualTypeOf<z.input<typeof CreateVideoResponse>>();
    expectTypeOf<AnswerOf<RouteOf<'getMedia'>>>().toEqualTypeOf<typeof WRITTEN>();
    expect(true).toBe(true);
  });

  it('refuses a handler whose answer its schema does not describe', () => {
    // @ts-expect-error a clip view has an id, a status, …: an empty object is no Video.
    const getVideo: Handlers['getVideo'] = () => ({});
    // @ts-expect-error getPricing answers `object: "pricing"`, not any string.
    const getPricing: Handlers['getPricing'] = () => ({ object: 'price' });
    // @ts-expect-error a JSON route never answers WRITTEN.
    const listVideos: Handlers['listVideos'] = () => Symbol('written') as typeof WRITTEN;
    expect([getVideo, getPricing, listVideos].every((handler) => typeof handler === 'function')).toBe(true);
  });
});
