import { ListenRecorder } from '../inspector/listen-recorder.js';
import { startInspector, type Inspector } from '../inspector/server.js';
import type { Listener } from '../relay/client.js';
import { ExitError } from './errors.js';
import type { Palette } from './output.js';

/** What `cliphook listen` hands its inspector. */
export interface InspectListenerContext {
  /** The listen command's `secret` (events are checked with it) and `state` (where the channel is kept). */
  options: { secret?: string | undefined; state: string };
  channel: { channel: string; url: string };
  forwardTo: string;
  /** Prints one record: a JSON line with `--json`, else the text line (time-stamped). */
  emit: (record: object, line: string) => void;
  /** Like `emit`, but the text line goes out as it is, as the start-up lines do. */
  announce: (record: object, line: string) => void;
  palette: Palette;
}

/**
 * Starts the inspector on 127.0.0.1:`port` for `listener` (docs/inspector.md): every event and its reply
 * recorded, kept in a log beside the state file so the list survives a restart, and Replay.
 */
export async function inspectListener(port: number, listener: Listener, { options, channel, forwardTo, emit, announce, palette: p }: InspectListenerContext): Promise<Inspector> {
  const recorder = await ListenRecorder.open({
    forwardTo,
    secret: options.secret,
    channel: channel.channel,
    channelUrl: channel.url,
    log: inspectorLog(options.state),
    onWarning: (message) => emit({ type: 'warning', code: 'inspector_log', message }, p.yellow(`warning: ${message}`)),
  });
  let inspector: Inspector;
  try {
    inspector = await startInspector({ port, listen: recorder });
  } catch (error) {
    await recorder.close();
    throw new ExitError(`--inspect: cannot listen on 127.0.0.1:${port}: ${(error as Error).message}`, 1);
  }
  recorder.attach(listener);
  recorder.on('replayed', (exchange) => {
    const { reply } = exchange;
    const what = `${exchange.edited ? 'edited replay' : 'replay'} of #${exchange.replayOf} from the inspector`;
    emit(
      { type: 'inspector_replay', id: exchange.id, replayOf: exchange.replayOf, edited: exchange.edited, status: reply?.status ?? null, error: reply?.error ?? null, durationMs: reply?.durationMs ?? null, url: exchange.url },
      `${p.bold('<--')} [${reply?.status ?? 'ERR'}] ${exchange.method} ${exchange.url} (${reply?.durationMs ?? 0} ms) ${p.dim(`(${what})`)}${reply?.error ? ` ${p.dim(`${reply.error.code}: ${reply.error.detail}`)}` : ''}`,
    );
  });
  announce({ type: 'inspector', url: inspector.url }, `Inspector: ${p.bold(inspector.url)} (every webhook, with Replay; --no-inspect to turn it off)`);
  return {
    ...inspector,
    close: async () => {
      await inspector.close();
      await recorder.close();
    },
  };
}

/** The inspector's log beside the state file: `.cliphook/listen.json` → `.cliphook/listen.events.jsonl`. */
export function inspectorLog(state: string): string {
  return `${state.replace(/\.json$/i, '')}.events.jsonl`;
}
