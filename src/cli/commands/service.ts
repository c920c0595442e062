import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { contractClient, ServiceUnreachableError, type CallSuccess, type ProblemAnswer } from '../../service/contract/client.js';
import type { OperationId, RouteSpec } from '../../service/contract/routes.js';
import type { SeedFixtureInput } from '../../service/testing/contract/seed.js';
import type { ChaosMode, FaultRuleRequest, HTTP_METHODS } from '../../service/testing/contract/test-helpers.js';
import { ExitError } from '../errors.js';
import { readServeKey } from '../service-key.js';
import { parseUrl } from '../../http/url.js';

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

/** The credential follows from the route's `auth`, as the contract declares it. */
const CREDENTIALS: Record<Exclude<RouteSpec['auth'], 'none'>, Credential> = { key: 'key', settings: 'key', admin: 'admin', admin_or_key: 'either' };

const USAGE =
  'top-up <credits>, keys [list|create|revoke <id>], rotate-secret <key id>, advance <seconds>, accounts [list|create|delete <id>], reset, seed <file.json>, ' +
  'requests [list|clear], faults [list|add <rule JSON>|delete <id>], webhook-chaos <mode,…|none>';

/** What one call answered: the typed 2xx body, or the problem (contract/client.ts). */
type Answer<T> = { ok: true; status: number; body: T | null } | { ok: false; status: number; statusText: string; problem: ProblemAnswer | null };

/**
 * `cliphook service …`: the account settings, the test clock and the test helpers of a running
 * `cliphook serve`, from the terminal, through the client typed from the contract's routes:
 * no path is written here. Each prints the answer; a problem ends with exit 1, a usage error with exit 2.
 */
export async function serviceCommand(action: string, args: string[], options: ServiceCommandOptions, out: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): Promise<void> {
  const origin = options.url.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (!parseUrl(origin)) throw new ExitError(`--url must be the service's URL, got ${JSON.stringify(options.url)}.`, 2);
  const credential = async (kind: Credential): Promise<string> => {
    if (kind !== 'key' && options.adminToken) return options.adminToken;
    if (kind === 'admin') throw new ExitError(`${action} needs --admin-token <token> (or CLIPHOOK_ADMIN_TOKEN): the admin_token serve printed at start, or the one given to serve --admin-token.`, 2);
    return options.apiKey || (await keyFromData(options.data ?? '.cliphook/service.json'));
  };
  const client = contractClient({ origin, token: (route) => credential(CREDENTIALS[route.auth as keyof typeof CREDENTIALS]) });
  /** Prints what `pending` answers, by `show` (or as JSON with --json); a problem is exit 1. */
  const print = async <T>(pending: Promise<Answer<T>>, show: (body: T) => string) => {
    let answer: Answer<T>;
    try {
      answer = await pending;
    } catch (error) {
      if (error instanceof ServiceUnreachableError) throw new ExitError(`cannot reach the service at ${origin}: ${unreachable(error.cause)}`, 1);
      throw error;
    }
    if (!answer.ok) {
      const { problem } = answer;
      const pointer = typeof problem?.pointer === 'string' ? ` (at ${problem.pointer})` : '';
      throw new ExitError(`${answer.status} ${String(problem?.code ?? '')}: ${String(problem?.detail ?? answer.statusText)}${pointer}`, 1);
    }
    if (answer.body === null) throw new ExitError(`${answer.status}: the answer is not JSON; is ${origin} a cliphook serve?`, 1);
    out(options.json ? JSON.stringify(answer.body) : show(answer.body));
  };
  const number = (text: string | undefined, what: string, usage: string) => {
    // A missing number is a usage line, not "got undefined".
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
  const accountQuery = account === undefined ? {} : { account: String(account) };
  switch (action) {
    case 'top-up':
      return print(client.call('topUp', { body: { credits: number(args[0], 'a number of credits', '<credits> (adds them to the balance of the key\'s account)') } }), show.topUp);
    case 'advance':
      return print(client.call('advanceClock', { body: { seconds: number(args[0], 'a number of seconds', '<seconds> [--account <id>] (moves the test clock)'), ...(account === undefined ? {} : { account }) } }), show.clock);
    case 'rotate-secret':
      if (!args[0]) throw new ExitError('rotate-secret needs the key id (key_…), from `cliphook service keys`.', 2);
      return print(client.call('rotateSecret', { params: { id: args[0] } }), show.rotated);
    case 'keys': {
      const [sub = 'list', id] = args;
      if (sub === 'list') return print(client.call('listKeys'), show.keys);
      if (sub === 'create') return print(client.call('createKey'), show.createdKey);
      if (sub === 'revoke' && id) return print(client.call('revokeKey', { params: { id } }), show.revokedKey);
      throw new ExitError('keys takes list, create, or revoke <key id>.', 2);
    }
    case 'accounts': {
      const [sub = 'list', id] = args;
      if (sub === 'list') return print(client.call('listTestAccounts'), show.accounts);
      if (sub === 'create') {
        const balance = whole(options.balance, '--balance');
        return print(client.call('createTestAccount', { body: { ...(options.name === undefined ? {} : { name: options.name }), ...(balance === undefined ? {} : { balance }) } }), show.createdAccount);
      }
      if (sub === 'delete' && id && /^\d+$/.test(id)) return print(client.call('deleteTestAccount', { params: { id } }), show.deletedAccount);
      throw new ExitError('accounts takes list, create [--name <name>] [--balance <credits>], or delete <account id>.', 2);
    }
    case 'reset':
      return print(client.call('resetService'), show.reset);
    case 'seed': {
      if (!args[0]) throw new ExitError('seed needs a JSON fixture file (docs/service.md, "Seed").', 2);
      // The file is the user's: the service checks it (a refusal names the member by its JSON Pointer).
      return print(client.call('seedService', { body: (await readJson(args[0], 'seed')) as SeedFixtureInput }), show.seeded);
    }
    case 'requests': {
      const [sub = 'list'] = args;
      if (sub === 'clear') return print(client.call('clearRequests', { query: accountQuery }), show.cleared);
      if (sub !== 'list') throw new ExitError('requests takes list [--method --path --operation --status --account --limit] or clear [--account].', 2);
      const { method, path, operation, status, limit } = options;
      return print(client.call('listRequests', { query: { method: method as JournalMethod | undefined, path, operation, status, limit, ...accountQuery } }), show.requests);
    }
    case 'faults': {
      const [sub = 'list', rule] = args;
      if (sub === 'list') return print(client.call('listFaultRules', { query: accountQuery }), show.faults);
      if (sub === 'delete' && rule) return print(client.call('deleteFaultRule', { params: { id: rule } }), show.deletedFault);
      if (sub === 'add' && rule) {
        // The rule is the user's JSON: the service checks it.
        const body = (rule.startsWith('@') ? await readJson(rule.slice(1), 'faults add') : parseJson(rule, 'faults add')) as FaultRuleBody;
        return print(client.call('createFaultRule', { body }), show.addedFault);
      }
      throw new ExitError(`faults takes list [--account], add '<rule JSON>' (or @file.json), or delete <rule id>.`, 2);
    }
    case 'webhook-chaos': {
      if (!args[0]) throw new ExitError('webhook-chaos needs the modes, comma-separated (webhook_duplicate,webhook_late), or none.', 2);
      // The modes are checked by the service (400 invalid_parameter names a wrong one).
      const modes = (args[0] === 'none' ? [] : args[0].split(',').map((mode) => mode.trim()).filter(Boolean)) as ChaosMode[];
      return print(client.call('setWebhookChaos', { body: { modes, ...(account === undefined ? {} : { account }) } }), show.chaos);
    }
    default:
      throw new ExitError(`unknown action ${JSON.stringify(action)}: ${USAGE}.`, 2);
  }
}

/**
 * Why a request got no answer, in words: fetch says only "fetch failed", its cause
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

/** The body an operation answers (contract/client.ts), for the lines below. */
type Body<Id extends OperationId> = CallSuccess<Id>;

/** How each answer reads in the terminal, by operation. */
const show = {
  topUp: (answer: Body<'topUp'>) => `balance: ${String(answer.balance)} credits`,
  clock: (answer: Body<'advanceClock'>) => `clock${answer.account === null || answer.account === undefined ? '' : ` of account ${String(answer.account)}`}: ${String(answer.now)} (advanced ${String(answer.advanced_seconds)} s)`,
  rotated: (answer: Body<'rotateSecret'>) => `new webhook secret of ${String(answer.id)}: ${String(answer.webhook_secret)} (shown once; queued deliveries keep the old one)`,
  keys: (answer: Body<'listKeys'>) => answer.data.map((key) => `${String(key.id)}  ${String(key.key_hint)}  created ${String(key.created_at)}`).join('\n') || '(no keys)',
  createdKey: (answer: Body<'createKey'>) => `created ${String(answer.id)}\n  API key         ${String(answer.api_key)}\n  webhook secret  ${String(answer.webhook_secret)}\n(shown once)`,
  revokedKey: (answer: Body<'revokeKey'>) => `revoked ${String(answer.id)}`,
  accounts: (answer: Body<'listTestAccounts'>) => answer.data.map((row) => `${String(row.id)}  ${String(row.name)}  ${String(row.balance)} credits${row.default ? '  (default)' : ''}`).join('\n') || '(no accounts)',
  createdAccount: (answer: Body<'createTestAccount'>) => `created account ${String(answer.id)} (${String(answer.name)}), ${String(answer.balance)} credits\n  API key         ${String(answer.api_key)}\n  webhook secret  ${String(answer.webhook_secret)}`,
  deletedAccount: (answer: Body<'deleteTestAccount'>) => `deleted account ${String(answer.id)}`,
  reset: (answer: Body<'resetService'>) => `reset: a fresh start, clock at ${String(answer.now)}`,
  seeded: (answer: Body<'seedService'>) =>
    Object.entries(answer)
      .flatMap(([kind, named]) => Object.entries(named as Record<string, unknown>).map(([name, value]) => `${kind.replace(/s$/, '')} ${name}: ${typeof value === 'object' && value !== null ? `${String((value as { id?: unknown }).id)}  API key ${String((value as { api_key?: unknown }).api_key)}` : String(value)}`))
      .join('\n') || '(nothing seeded)',
  requests: (answer: Body<'listRequests'>) =>
    answer.data.map((row) => `${String(row.at)}  account ${String(row.account)}  ${String(row.method)} ${String(row.path)}  ${String(row.status)}${row.code ? ` ${String(row.code)}` : ''}${row.idempotency_key ? `  Idempotency-Key ${String(row.idempotency_key)}${row.replayed ? ' (replayed)' : ''}` : ''}`).join('\n') || '(no requests)',
  cleared: (answer: Body<'clearRequests'>) => `cleared ${String(answer.deleted)} journal entries`,
  faults: (answer: Body<'listFaultRules'>) => answer.data.map((row) => `${String(row.id)}  ${JSON.stringify(compact(row.match))} → ${JSON.stringify(row.action)}  hits ${String(row.hits)}, applied ${String(row.applied)}`).join('\n') || '(no fault rules)',
  deletedFault: (answer: Body<'deleteFaultRule'>) => `deleted ${String(answer.id)}`,
  addedFault: (answer: Body<'createFaultRule'>) => `added ${String(answer.id)}: ${JSON.stringify(compact(answer.match))} → ${JSON.stringify(answer.action)}`,
  chaos: (answer: Body<'setWebhookChaos'>) => `webhook chaos of account ${String(answer.account)}: ${answer.modes.join(', ') || 'off'}`,
};

type JournalMethod = (typeof HTTP_METHODS)[number];
type FaultRuleBody = z.input<typeof FaultRuleRequest>;

/** An object without its null members, as a rule's `match` reads best. */
function compact(value: unknown): unknown {
  return typeof value === 'object' && value !== null ? Object.fromEntries(Object.entries(value).filter(([, member]) => member !== null)) : value;
}
