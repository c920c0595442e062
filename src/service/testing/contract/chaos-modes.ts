// The chaos modes in a module without zod, so testing/chaos.ts (whose declarations the
// service's options reach) names no zod through test-helpers.ts, which re-exports them.

/** The webhook chaos modes, as prompt markers `simulate:<mode>` or an account's modes (docs/service.md "Webhook chaos"). */
export const CHAOS_MODES = ['webhook_duplicate', 'webhook_concurrent', 'webhook_cut', 'webhook_late', 'webhook_out_of_order', 'webhook_previous_secret'] as const;
/** One webhook chaos mode. */
export type ChaosMode = (typeof CHAOS_MODES)[number];
