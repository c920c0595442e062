import type { ClipChaos } from '../resources/videos/webhooks.js';
import { batchRelease, chaosModesOf, combineModes, knownModes } from './chaos.js';
import type { WebhookChaos } from './chaos-transport.js';

// The webhook chaos a clip's webhooks use (resources/videos/webhooks.ts), made from the test
// controls and handed in by the composition root, so resources/ import nothing of testing/.

/** The clips' view of webhook chaos over the emitter's chaos transport. */
export function clipChaos(transport: WebhookChaos): ClipChaos {
  return {
    modesOf: (prompt, accountModes, extra = []) => combineModes(chaosModesOf(prompt), knownModes(accountModes), knownModes(extra)),
    releaseOrder: (clips) => {
      const release = batchRelease(clips);
      return release.ready ? release.order : null;
    },
    register: (id, { modes, secret, previousSecret }) => transport.register(id, { modes: knownModes(modes), secret, previousSecret }),
    firstAnswered: (id) => transport.firstAnswered(id),
    stopWaiting: (id) => transport.stopWaiting(id),
  };
}
