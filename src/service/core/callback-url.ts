import { checkCallbackUrl } from '../../emitter/index.js';
import { isLoopbackHost } from '../../http/loopback.js';
import { ServiceError } from '../contract/problems.js';

/** A clip's callback URL once checked: the form kept, and the warning a local-only URL carries. */
export interface CheckedCallback {
  url: string;
  warning?: { code: string; detail: string };
}

/**
 * A clip's callback URL as the service takes it (spec 4.1), the one rule of `POST /v1/videos` and of a
 * seed fixture: https, at most 2048 characters, no credentials; under `--strict` no
 * private or loopback host; outside it plain http for a loopback host only, with a warning. Host names are
 * checked again when the webhook connects. Throws 400 `invalid_callback_url`.
 * @example checkClipCallback('http://127.0.0.1:3000/hooks', { strict: false }) // { url, warning: { code: 'callback_url_not_https', … } }
 */
export function checkClipCallback(url: string, { strict }: { strict: boolean }): CheckedCallback {
  let parsed: URL;
  try {
    parsed = checkCallbackUrl(url, { allowPrivateNetworks: !strict });
  } catch (error) {
    // The emitter's sentences name its library option; here the switch is the service's --strict.
    const detail = (error as Error).message.replace(' (http only with `allowPrivateNetworks`)', '').replace('; allow it with `allowPrivateNetworks`', '');
    throw new ServiceError('invalid_callback_url', detail.replace(/^The callback URL/, 'callback_url'));
  }
  if (parsed.protocol === 'https:') return { url: parsed.href };
  if (!isLoopbackHost(parsed.hostname)) throw new ServiceError('invalid_callback_url', 'callback_url must be https; plain http is taken only for a loopback host (localhost, 127.0.0.1, [::1]).');
  // Taken here for local development; the real service would refuse it (spec 4.1): say so now.
  return { url: parsed.href, warning: { code: 'callback_url_not_https', detail: 'The real service takes https callback URLs only; cliphook serve --strict refuses this one.' } };
}
