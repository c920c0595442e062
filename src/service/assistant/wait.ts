import { LIMITS } from '../contract/limits.js';
import type { Video } from '../resources/videos/lifecycle.js';
import type { ToolParts } from './parts.js';

/** The longest a tool waits for a clip or an image to end (spec 5.7: "waits up to 45 s"). */
export const MAX_TOOL_WAIT_SECONDS = LIMITS.assistant.toolWaitSeconds;

const ended = (video: Video) => video.status === 'done' || video.status === 'error' || video.status === 'cancelled';

/**
 * Resolves with the clip once it ends, woken by its own `terminal` event (or the `change` that cancels
 * it), or after `ms` on the service's clock, or when `signal` aborts: never by polling.
 */
export function waitForClip(service: Pick<ToolParts, 'state' | 'clock'>, video: Video, ms: number, signal?: AbortSignal): Promise<Video> {
  if (ended(video) || ms <= 0 || signal?.aborted) return Promise.resolve(video);
  return new Promise((resolve) => {
    const done = () => {
      service.state.videos.off('terminal', onTerminal);
      service.state.videos.off('change', onChange);
      signal?.removeEventListener('abort', done);
      service.clock.clearTimeout(timer);
      resolve(service.state.videos.get(video.id) ?? video);
    };
    const onTerminal = (changed: Video) => changed.id === video.id && done();
    const onChange = (changed: Video) => changed.id === video.id && changed.status === 'cancelled' && done();
    service.state.videos.on('terminal', onTerminal);
    service.state.videos.on('change', onChange);
    signal?.addEventListener('abort', done, { once: true });
    const timer = service.clock.setTimeout(done, ms);
  });
}
