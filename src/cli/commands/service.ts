import { ExitError } from '../errors.js';
import { readServeKey } from '../service-key.js';

export interface ServiceCommandOptions {
  /** The service's origin, as `cliphook serve` printed it. */
  url: string;
  apiKey?: string;
  /** serve's data file, where the key is found when `apiKey` is not given (the CLI's default: `.cliphook/service.json`). */
  data?: string;
  json?: boolean;
}

/**
 * `cliphook service top-up|keys|rotate-secret|advance`: the account settings and the test clock of a
 * running `cliphook serve`, from the terminal. Each prints the answer; a problem ends with exit 1.
 */
export async function serviceCommand(action: string, args: string[], options: ServiceCommandOptions, out: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): Promise<void> {
  const apiKey = options.apiKey || (await keyFromData(options.data ?? '.cliphook/service.json'));
  const origin = options.url.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (!URL.canParse(origin)) throw new ExitError(`--url must be the service's URL, got ${JSON.stringify(options.url)}.`, 2);
  const call = async (method: string, path: string, body?: unknown) => {
    let res: Response;
    try {
      res = await fetch(`${origin}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new ExitError(`cannot reach the service at ${origin}: ${(error as Error).message}`, 1);
    }
    const answer = (await res.json().catch(() => null)) as Record<string, unknown> | null;
    if (!res.ok) throw new ExitError(`${res.status} ${String(answer?.code ?? '')}: ${String(answer?.detail ?? res.statusText)}`, 1);
    out(options.json ? JSON.stringify(answer) : describe(action, answer ?? {}));
  };
  const number = (text: string | undefined, what: string) => {
    if (text === undefined || !/^\d+(\.\d+)?$/.test(text)) throw new ExitError(`${action} needs ${what}, got ${JSON.stringify(text)}.`, 2);
    return Number(text);
  };
  switch (action) {
    case 'top-up':
      return call('POST', '/settings/top-up', { credits: number(args[0], 'a number of credits') });
    case 'advance':
      return call('POST', '/test_helpers/clock/advance', { seconds: number(args[0], 'a number of seconds') });
    case 'rotate-secret':
      if (!args[0]) throw new ExitError('rotate-secret needs the key id (key_…), from `cliphook service keys`.', 2);
      return call('POST', `/settings/keys/${encodeURIComponent(args[0])}/rotate-secret`);
    case 'keys': {
      const [sub = 'list', id] = args;
      if (sub === 'list') return call('GET', '/settings/keys');
      if (sub === 'create') return call('POST', '/settings/keys');
      if (sub === 'revoke' && id) return call('DELETE', `/settings/keys/${encodeURIComponent(id)}`);
      throw new ExitError('keys takes list, create, or revoke <key id>.', 2);
    }
    default:
      throw new ExitError(`unknown action ${JSON.stringify(action)}: top-up <credits>, keys [list|create|revoke <id>], rotate-secret <key id>, advance <seconds>.`, 2);
  }
}

/** The key of the local serve whose data file is `file`, or a usage error saying what to pass instead. */
async function keyFromData(file: string): Promise<string> {
  const missing = `needs --api-key <key> (or CLIPHOOK_API_KEY), or the data file of a local cliphook serve (--data)`;
  let key: string | null;
  try {
    key = await readServeKey(file);
  } catch (error) {
    throw new ExitError(`${missing}: cannot read ${file}: ${(error as Error).message}`, 2);
  }
  if (key === null) throw new ExitError(`${missing}: there is none at ${file}, or it holds no live key of the first account`, 2);
  return key;
}

function describe(action: string, answer: Record<string, unknown>): string {
  switch (action) {
    case 'top-up':
      return `balance: ${String(answer.balance)} credits`;
    case 'advance':
      return `clock: ${String(answer.now)} (advanced ${String(answer.advanced_seconds)} s)`;
    case 'rotate-secret':
      return `new webhook secret of ${String(answer.id)}: ${String(answer.webhook_secret)} (shown once; queued deliveries keep the old one)`;
    default: {
      if (Array.isArray(answer.data)) return (answer.data as Array<Record<string, unknown>>).map((key) => `${String(key.id)}  ${String(key.key_hint)}  created ${String(key.created_at)}`).join('\n') || '(no keys)';
      if (answer.api_key) return `created ${String(answer.id)}\n  API key         ${String(answer.api_key)}\n  webhook secret  ${String(answer.webhook_secret)}\n(shown once)`;
      return `revoked ${String(answer.id)}`;
    }
  }
}
