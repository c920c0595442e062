import type { Accounts } from '../core/accounts.js';
import type { SimulatedClock } from '../core/clock.js';
import type { Gate } from '../core/gate.js';
import type { Idempotency } from '../core/idempotency.js';
import type { ServiceStore } from '../core/store.js';
import type { AccountCommands } from '../resources/account/commands.js';
import type { Assets } from '../resources/assets/assets.js';
import type { AssetCommands } from '../resources/assets/commands.js';
import type { ImageCommands } from '../resources/images/commands.js';
import type { ImageJobs } from '../resources/images/jobs.js';
import type { PhotoUploads } from '../resources/photos/uploads.js';
import type { VideoCommands } from '../resources/videos/commands.js';
import type { VideoLifecycle } from '../resources/videos/lifecycle.js';
import type { ServiceTables } from '../service.js';
import type { Caller } from '../core/gate.js';
import type { ControlledRun, Step } from '../runner/chain.js';

// What each part of the assistant endpoint uses of the service, one interface per consumer
// (as `RouteParts` for /v1), so none takes the whole `Service`. The service satisfies them all as it is.

/** The service's origin, known once it listens (and read again: it may change). */
interface Origin {
  readonly origin: string;
}

/** What the tools use: the commands of `/v1` and the state they wait on (a clip's end, a photo's moderation). */
export interface ToolParts extends Origin {
  readonly videos: VideoCommands;
  readonly images: ImageCommands;
  readonly assets: AssetCommands;
  readonly account: Pick<AccountCommands, 'view'>;
  readonly photoUploads: PhotoUploads;
  readonly state: { readonly videos: VideoLifecycle; readonly images: ImageJobs; readonly assets: Assets };
  readonly store: ServiceStore<ServiceTables>;
  readonly clock: Pick<SimulatedClock, 'now' | 'setTimeout' | 'clearTimeout'>;
}

/** What the spending rules use: the data file, the one Idempotency-Key engine, the clips they count, the clock. */
export interface SpendingParts {
  readonly store: ServiceStore<ServiceTables>;
  readonly idempotency: Pick<Idempotency, 'beginHere'>;
  readonly state: { readonly videos: VideoLifecycle };
  readonly clock: Pick<SimulatedClock, 'now'>;
}

/** What the sign-in and its authorization page use: the keys, the gate of `/v1`, the data file, the clock. */
export interface SignInParts extends Origin {
  readonly store: ServiceStore<ServiceTables>;
  readonly accounts: Pick<Accounts, 'get' | 'authenticate' | 'withLiveKey'>;
  readonly gate: Pick<Gate, 'lookup' | 'admit' | 'floor' | 'guessed'>;
  readonly clock: Pick<SimulatedClock, 'now' | 'actFor'>;
  readonly warn: (message: string) => void;
}

/** Everything the endpoint passes on. (The test controls every tool call runs under come as steps, `AssistantControls`.) */
export interface AssistantParts extends ToolParts, SpendingParts, SignInParts {
  readonly state: ToolParts['state'];
  readonly clock: Pick<SimulatedClock, 'now' | 'setTimeout' | 'clearTimeout' | 'actFor'>;
}

/**
 * The test controls, plugged in by the composition root (http/app.ts) as the steps /v1 runs, so the
 * assistant imports nothing of testing/: the request journal, and the fault rules.
 */
export interface AssistantControls {
  readonly journal: Step<ControlledRun<Caller>>;
  readonly faults: Step<ControlledRun<Caller>>;
}
