export { Inbox, type InboxIdleOptions } from './inbox.js';
export type { InboxOptions, InboxTimers } from './options.js';
export type { InboxRecord, InboxState, InboxSource, InboxStats, InboxListOptions, InboxPurgeOptions } from './record.js';
export { inboxDelay } from './backoff.js';
export type { BackoffOptions } from './backoff.js';
