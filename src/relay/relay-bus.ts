import type { StoredEvent } from './channel-types.js';
import type { Outcome } from './pending.js';

/**
 * The other relay processes that share this relay's channels: live events go out to the
 * processes holding listeners of the channel, and their listeners' answers come back to the process
 * whose sender waits. A relay on its data file is alone and has none.
 */
export interface RelayBus {
  /** Starts taking messages for `handlers`. */
  open(handlers: BusHandlers): Promise<void>;
  /** Withdraws this process's listeners and stops taking messages. */
  close(): Promise<void>;
  /**
   * A listener with `filter` (`*`, or its `--events` names joined by commas) connected here: subscribes
   * this process to the channel's live events and announces the listener. Resolves once both hold, so
   * an event stored after the catch-up is read is sure to be published here.
   */
  watch(channelId: string, filter: string): Promise<void>;
  /** That listener went away. */
  unwatch(channelId: string, filter: string): void;
  /** Sends a live event to the other processes; resolves with how many will answer. */
  publish(channelId: string, event: StoredEvent): Promise<number>;
  /** Answers the process `origin` that published an event: what the listeners here made of it. */
  answer(origin: string, channelId: string, seq: number, outcome: Outcome): void;
  /** Tells every process that a channel was deleted. */
  deleted(channelId: string): void;
}

export interface BusHandlers {
  /** A live event that process `origin` took, for a channel with listeners here. */
  event(origin: string, channelId: string, event: StoredEvent): void;
  /** A process's answer to an event published from here (this process's own copy counts, as `gone`). */
  answered(channelId: string, seq: number, outcome: Outcome): void;
  /** A channel was deleted, here or elsewhere. */
  deleted(channelId: string): void;
  /** The bus is back after an outage: live events sent meanwhile may have missed this process. */
  recovered(): void;
}
