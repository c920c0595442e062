import { readFile } from 'node:fs/promises';
import { ExitError } from '../errors.js';
import { readServeKey } from '../service-key.js';

export interface ServiceCommandOptions {
  /** The service's origin, as `cliphook serve` printed it. */
  url: string;
  apiKey?: string;
  /** The test helpers' admin token (serve's `admin_token`): accounts, reset, seed, and every account's journal, faults and chaos. */
  adminToken?: string;
  /** serve's data file, where the key is found when `apiKey` is not given (the CLI's default: `.cliphook/service.json`). */
  data?: string;
  /** accounts create: the new account's name and balance. */
  name?: string;
  balance?: string;
  /** requests, faults, webhook-chaos: the account (with the admin token). */
  account?: string;
  /** requests: filters. */
  method?: string;
  path?: string;
  operation?: string;
  status?: string;
  limit?: string;
  json?: boolean;
}

/** Which credential an action sends: the API key, the admin token, or the admin token when given and else the key. */
type Credential = 'key' | 'admin' | 'either';

const USAGE =
  'top-up <credits>, keys [list|create|revoke <id>], rotate-secret <key id>, advance <seconds>, accounts [list|create|delete <id>], reset, seed <file.json>, ' +
  'requests [list|clear], faults [list|add <rule JSON>|delete <id>], webhook-chaos <mode,…|none>';

/**
 * `cliphook service …`: the account settings, the test clock and the test helpers (issue 22) of a running
 * `cliphook serve`, from the terminal. Each prints the answer; a problem ends with exit 1, a usage error with exit 2.
 */
export async function serviceCommand(action: string, args: string[], options: ServiceCommandOptions, out: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): Promise<void> {
  const origin = options.url.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (!URL.canParse(origin)) throw new ExitError(`--url must be the service's URL, got ${JSON.stringify(options.url)}.`, 2);
  const credential = async (kind: Credential): Promise<string> => {
    if (kind !== 'key' && options.adminToken) return options.adminToken;
    if (kind === 'admin') throw new ExitError(`${action} needs --admin-token <token> (or CLIPHOOK_ADMIN_TOKEN): the admin_token serve printed at start, or the one given to serve --admin-token.`, 2);
    return options.apiKey || (await keyFromData(options.data ?? '.cliphook/service.json'));
  };
  const call = async (kind: Credential, method: string, path: string, body?: unknown) => {
    const token = await credential(kind);
    let res: Response;
    try {
      res = await fetch(`${origin}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new ExitError(`cannot reach the service at ${origin}: ${unreachable(error)}`, 1);
    }
    const answer = (await res.json().catch(() => null)) as Record<string, unknown> | null;
    if (!res.ok) {
      const pointer = typeof answer?.pointer === 'string' ? ` (at ${answer.pointer})` : '';
      throw new ExitError(`${res.status} ${String(answer?.code ?? '')}: ${String(answer?.detail ?? res.statusText)}${pointer}`, 1);
    }
    out(options.json ? JSON.stringify(answer) : describe(action, args[0], answer ?? {}));
  };
  const number = (text: string | undefined, what: string, usage: string) => {
    // Issue 29 item 18: a missing number is a usage line, not "got undefined".
    if (text === undefined) throw new ExitError(`usage: cliphook service ${action} ${usage}`, 2);
    if (!/^\d+(\.\d+)?$/.test(text)) throw new ExitError(`${action} needs ${what}, got ${JSON.stringify(text)}.`, 2);
    return Number(text);
  };
  const whole = (text: string | undefined, flag: string) => {
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text)) throw new ExitError(`${flag} must be a whole number, got ${JSON.stringify(text)}.`, 2);
    return Number(text);
  };
  const account = whole(options.account, '--account');
  const accountQuery = account === undefined ? '' : `?account=${account}`;
  switch (action) {
    case 'top-up':
      return call('key', 'POST', '/settings/top-up', { credits: number(args[0], 'a number of credits', '<credits> (adds them to the balance of the key\'s account)') });
    case 'advance':
      return call('either', 'POST', '/test_helpers/clock/advance', { seconds: number(args[0], 'a number of seconds', '<seconds> [--account <id>] (moves the test clock)'), ...(account === undefined ? {} : { account }) });
    case 'rotate-secret':
      if (!args[0]) throw new ExitError('rotate-secret needs the key id (key_…), from `cliphook service keys`.', 2);
      return call('key', 'POST', `/settings/keys/${encodeURIComponent(args[0])}/rotate-secret`);
    case 'keys': {
      const [sub = 'list', id] = args;
      if (sub === 'list') return call('key', 'GET', '/settings/keys');
      if (sub === 'create') return call('key', 'POST', '/settings/keys');
      if (sub === 'revoke' && id) return call('key', 'DELETE', `/settings/keys/${encodeURIComponent(id)}`);
      throw new ExitError('keys takes list, create, or revoke <key id>.', 2);
    }
    case 'accounts': {
      const [sub = 'list', id] = args;
      if (sub === 'list') return call('admin', 'GET', '/test_helpers/accounts');
      if (sub === 'create') {
        const balance = whole(options.balance, '--balance');
        return call('admin', 'POST', '/test_helpers/accounts', { ...(options.name === undefined ? {} : { name: options.name }), ...(balance === undefined ? {} : { balance }) });
      }
      if (sub === 'delete' && id && /^\d+$/.test(id)) return call('admin', 'DELETE', `/test_helpers/accounts/${id}`);
      throw new ExitError('accounts takes list, create [--name <name>] [--balance <credits>], or delete <account id>.', 2);
    }
    case 'reset':
      return call('admin', 'POST', '/test_helpers/reset', {});
    case 'seed': {
      if (!args[0]) throw new ExitError('seed needs a JSON fixture file (docs/service.md, "Seed").', 2);
      return call('admin', 'POST', '/test_helpers/seed', await readJson(args[0], 'seed'));
    }
    case 'requests': {
      const [sub = 'list'] = args;
      if (sub === 'clear') return call('either', 'DELETE', `/test_helpers/requests${accountQuery}`);
      if (sub !== 'list') throw new ExitError('requests takes list [--method --path --operation --status --account --limit] or clear [--account].', 2);
      const query = new URLSearchParams();
      for (const name of ['method', 'path', 'operation', 'status', 'limit'] as const) if (options[name] !== undefined) query.set(name, options[name]!);
      if (account !== undefined) query.set('account', String(account));
      const text = query.toString();
      return call('either', 'GET', `/test_helpers/requests${text ? `?${text}` : ''}`);
    }
    case 'faults': {
      const [sub = 'list', rule] = args;
      if (sub === 'list') return call('either', 'GET', `/test_helpers/faults${accountQuery}`);
      if (sub === 'delete' && rule) return call('either', 'DELETE', `/test_helpers/faults/${encodeURIComponent(rule)}`);
      if (sub === 'add' && rule) return call('either', 'POST', '/test_helpers/faults', rule.startsWith('@') ? await readJson(rule.slice(1), 'faults add') : parseJson(rule, 'faults add'));
      throw new ExitError(`faults takes list [--account], add '<rule JSON>' (or @file.json), or delete <rule id>.`, 2);
    }
    case 'webhook-chaos': {
      if (!args[0]) throw new ExitError('webhook-chaos needs the modes, comma-separated (webhook_duplicate,webhook_late), or none.', 2);
      const modes = args[0] === 'none' ? [] : args[0].split(',').map((mode) => mode.trim()).filter(Boolean);
      return call('either', 'POST', '/test_helpers/webhook_chaos', { modes, ...(account === undefined ? {} : { account }) });
    }
    default:
      throw new ExitError(`unknown action ${JSON.stringify(action)}: ${USAGE}.`, 2);
  }
}

/**
 * Why a request got no answer, in words (issue 29 item 18): fetch says only "fetch failed", its cause
 * says why. A refused connection is the usual one: no serve at that URL.
 */
function unreachable(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown; errors?: Array<{ code?: unknown }> } }).cause;
  const code = cause?.code ?? cause?.errors?.[0]?.code;
  if (code === 'ECONNREFUSED') return 'connection refused, nothing listens there. Start it with `cliphook serve`, or give the URL it printed with --url (or CLIPHOOK_SERVICE_URL).';
  const why = typeof code === 'string' ? code : typeof cause?.message === 'string' ? cause.message : (error as Error).message;
  return `${why}. Is \`cliphook serve\` running there? Give the URL it printed with --url (or CLIPHOOK_SERVICE_URL).`;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ExitError(`${what}: not valid JSON: ${(error as Error).message}`, 2);
  }
}

async function readJson(file: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ExitError(`${what}: cannot read ${file}: ${(error as Error).message}`, 2);
  }
  return parseJson(text, `${what} ${file}`);
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

function describe(action: string, sub: string | undefined, answer: Record<string, unknown>): string {
  const rows = Array.isArray(answer.data) ? (answer.data as Array<Record<string, unknown>>) : null;
  switch (action) {
    case 'top-up':
      return `balance: ${String(answer.balance)} credits`;
    case 'advance':
      return `clock${answer.account === null || answer.account === undefined ? '' : ` of account ${String(answer.account)}`}: ${String(answer.now)} (advanced ${String(answer.advanced_seconds)} s)`;
    case 'rotate-secret':
      return `new webhook secret of ${String(answer.id)}: ${String(answer.webhook_secret)} (shown once; queued deliveries keep the old one)`;
    case 'accounts':
      if (rows) return rows.map((row) => `${String(row.id)}  ${String(row.name)}  ${String(row.balance)} credits${row.default ? '  (default)' : ''}`).join('\n') || '(no accounts)';
      if (answer.api_key) return `created account ${String(answer.id)} (${String(answer.name)}), ${String(answer.balance)} credits\n  API key         ${String(answer.api_key)}\n  webhook secret  ${String(answer.webhook_secret)}`;
      return `deleted account ${String(answer.id)}`;
    case 'reset':
      return `reset: a fresh start, clock at ${String(answer.now)}`;
    case 'seed':
      return Object.entries(answer)
        .flatMap(([kind, named]) => Object.entries(named as Record<string, unknown>).map(([name, value]) => `${kind.replace(/s$/, '')} ${name}: ${typeof value === 'object' && value !== null ? `${String((value as { id?: unknown }).id)}  API key ${String((value as { api_key?: unknown }).api_key)}` : String(value)}`))
        .join('\n') || '(nothing seeded)';
    case 'requests':
      if (rows) return rows.map((row) => `${String(row.at)}  account ${String(row.account)}  ${String(row.method)} ${String(row.path)}  ${String(row.status)}${row.code ? ` ${String(row.code)}` : ''}${row.idempotency_key ? `  Idempotency-Key ${String(row.idempotency_key)}${row.replayed ? ' (replayed)' : ''}` : ''}`).join('\n') || '(no requests)';
      return `cleared ${String(answer.deleted)} journal entries`;
    case 'faults':
      if (rows) return rows.map((row) => `${String(row.id)}  ${JSON.stringify(compact(row.match))} → ${JSON.stringify(row.action)}  hits ${String(row.hits)}, applied ${String(row.applied)}`).join('\n') || '(no fault rules)';
      if (sub === 'delete') return `deleted ${String(answer.id)}`;
      return `added ${String(answer.id)}: ${JSON.stringify(compact(answer.match))} → ${JSON.stringify(answer.action)}`;
    case 'webhook-chaos':
      return `webhook chaos of account ${String(answer.account)}: ${(answer.modes as string[]).join(', ') || 'off'}`;
    default: {
      if (rows) return rows.map((key) => `${String(key.id)}  ${String(key.key_hint)}  created ${String(key.created_at)}`).join('\n') || '(no keys)';
      if (answer.api_key) return `created ${String(answer.id)}\n  API key         ${String(answer.api_key)}\n  webhook secret  ${String(answer.webhook_secret)}\n(shown once)`;
      return `revoked ${String(answer.id)}`;
    }
  }
}

/** An object without its null members, as a rule's `match` reads best. */
function compact(value: unknown): unknown {
  return typeof value === 'object' && value !== null ? Object.fromEntries(Object.entries(value).filter(([, member]) => member !== null)) : value;
}
