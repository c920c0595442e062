import { Option, type Command } from 'commander';

/**
 * The command table. Each entry registers one command whose action lazily imports its module from
 * `commands/<name>.ts`, so `cliphook --help` loads nothing heavy.
 */
export const commands: ReadonlyArray<(program: Command) => void> = [
  registerTrigger,
  registerDeliveries,
  registerInbox,
  registerRelay,
  registerListen,
  registerServe,
  registerService,
  registerDev,
  registerOpenApi,
  registerReconcile,
];

const OUTBOX_HELP = 'the outbox file deliveries are recorded in';
const NO_INSPECT_HELP = 'do not serve the inspector';
const collect = (value: string, previous: string[]): string[] => [...previous, value];

function registerTrigger(program: Command): void {
  program
    .command('trigger')
    .description('send a signed test event to a URL, as the service would (private addresses allowed)')
    .argument('<event>', 'video.completed or video.failed')
    // Required, but checked by the command: a missing one is a one-line usage error (exit 2) like the others.
    .option('--url <url>', 'where to POST the event (required)')
    .addOption(new Option('--secret <secret>', 'the signing secret (required)').env('CLIPHOOK_SECRET'))
    .option('--error-code <code>', 'video.failed only: an error_code of spec 2.9, with its error sentence')
    // One default in --help, as for listen's flags: without it the collecting [] would print "(default: [])".
    .addOption(new Option('--set <key=value>', 'override a field of the body (repeatable; JSON values are parsed)').argParser(collect).default([], 'none'))
    .option('--json', 'print the delivery as JSON instead of lines')
    .option('--retry', 'follow the retry schedule (30 s, 2 min, 10 min, 30 min, 2 h) instead of one attempt')
    .option('--outbox <file>', OUTBOX_HELP, '.cliphook/outbox.json')
    .option('--timeout <ms>', 'time allowed per attempt', '10000')
    .action(async (event: string, options) => (await import('./commands/trigger.js')).trigger(event, options));
}

/** `--redis` of the deliveries commands: the queue of `serve --redis` instead of an outbox file. */
const REDIS_DELIVERIES = () => new Option('--redis <url>', 'the deliveries in the BullMQ queue on this Redis (what serve --redis sends) instead of --outbox').env('CLIPHOOK_REDIS_URL');

function registerDeliveries(program: Command): void {
  const deliveries = program.command('deliveries').description('list, show and redeliver the deliveries in the outbox');
  deliveries
    .command('list')
    .description('list deliveries, newest first')
    .option('--state <state>', 'only pending, delivering, delivered or failed')
    .option('--limit <n>', 'at most this many', '20')
    .option('--json', 'print JSON')
    .option('--outbox <file>', OUTBOX_HELP, '.cliphook/outbox.json')
    .addOption(REDIS_DELIVERIES())
    .action(async (options) => (await import('./commands/deliveries.js')).list(options));
  deliveries
    .command('show')
    .description('show one delivery with every attempt and its payload')
    .argument('<id>', 'the delivery id (dlv_…)')
    .option('--json', 'print JSON')
    .option('--outbox <file>', OUTBOX_HELP, '.cliphook/outbox.json')
    .addOption(REDIS_DELIVERIES())
    .action(async (id: string, options) => (await import('./commands/deliveries.js')).show(id, options));
  deliveries
    .command('redeliver')
    .description('send a delivery again now, with the same id and a fresh delivered_at')
    .argument('<id>', 'the delivery id (dlv_…)')
    .option('--retry', 'follow the retry schedule instead of one attempt')
    .option('--json', 'print the delivery as JSON instead of lines')
    .option('--outbox <file>', OUTBOX_HELP, '.cliphook/outbox.json')
    .option('--timeout <ms>', 'time allowed per attempt', '10000')
    .addOption(REDIS_DELIVERIES())
    .action(async (id: string, options) => (await import('./commands/deliveries.js')).redeliver(id, options));
}

/** The receiver's inbox (`createReceiver({ inbox })`), on its file or its Redis. */
function registerInbox(program: Command): void {
  const inbox = program.command('inbox').description("list, show, replay and purge the events in a receiver's inbox (a file inbox only while its app is stopped; a Redis one live)");
  const where = (command: Command) =>
    command
      .option('--file <file>', 'the inbox file', '.cliphook/inbox.json')
      .addOption(new Option('--redis <url>', 'the Redis inbox on this Redis (redis://…) instead of --file').env('CLIPHOOK_REDIS_URL'))
      .option('--prefix <prefix>', "with --redis: the app's inbox.prefix", 'cliphook:inbox:')
      .option('--json', 'print JSON');
  where(inbox.command('list').description('list events, newest first'))
    .option('--state <state>', 'only pending, running, dead or done')
    .option('--limit <n>', 'at most this many', '20')
    .action(async (options) => (await import('./commands/inbox.js')).list(options));
  where(inbox.command('show').description('show one event: its state, runs, last error and body').argument('<id>', 'the event (its delivery id, dlv_…)'))
    .action(async (id: string, options) => (await import('./commands/inbox.js')).show(id, options));
  where(inbox.command('replay').description('make a dead or done event pending again, to run with source replay').argument('<id>', 'the event (its delivery id, dlv_…)'))
    .action(async (id: string, options) => (await import('./commands/inbox.js')).replay(id, options));
  where(inbox.command('purge').description('drop dead or done events that finished before a time'))
    .option('--state <state>', 'dead or done (required)')
    .option('--before <time>', 'an ISO 8601 time, or an age such as 7d (default: now)')
    .action(async (options) => (await import('./commands/inbox.js')).purge(options));
}

function registerRelay(program: Command): void {
  program
    .command('relay')
    .description('run a relay: takes webhooks at /in/<channel> and forwards them to `cliphook listen` over WebSocket')
    .option('--port <port>', 'port to listen on', '8787')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--public-url <url>', 'the base URL senders reach this relay at, used in channel URLs')
    // No default here: the command applies .cliphook/relay.json itself, so --data given with --redis is noticed.
    .option('--data <file>', 'data file keeping channels and buffered events across restarts (with <file>.journal and <file>.lock) (default: ".cliphook/relay.json", unless --redis)')
    .addOption(new Option('--redis <url>', 'keep channels and buffers in this Redis (redis://…) instead of a data file, shared with every relay process given the same Redis').env('CLIPHOOK_REDIS_URL'))
    .addOption(new Option('--admin-token <token>', 'require this bearer token to create channels').env('CLIPHOOK_ADMIN_TOKEN'))
    .option('--open', 'allow a --host other than loopback without --admin-token: anyone who reaches the relay can create channels')
    .option('--max-channels <n>', 'channels the relay holds at most; past it POST /channels answers 507', '1000')
    .option('--max-total-buffered-bytes <n>', 'body bytes (as base64) buffered across all channels; past it senders get 507', String(512 * 1024 * 1024))
    .action(async (options) => (await import('./commands/relay.js')).relay(options));
}

function registerListen(program: Command): void {
  program
    .command('listen')
    .description('forward the webhooks of a relay channel to a local URL, and carry the replies back')
    // Required, but checked by the command, so a missing one is a one-line usage error (exit 2).
    .option('--forward-to <url>', 'the local URL, e.g. http://localhost:3000/webhooks (required)')
    .addOption(new Option('--relay <url>', 'the relay').env('CLIPHOOK_RELAY').default('http://127.0.0.1:8787'))
    .addOption(
      new Option('--secret <secret>', 'the signing secret: answer events whose signature does not verify with 401 (never forwarded), and re-sign events that waited at the relay with a fresh delivered_at').env('CLIPHOOK_SECRET'),
    )
    .option('--forward-invalid', 'with --secret: forward events whose signature does not verify anyway (debugging signatures only)')
    // One default each in --help: the [] that collects the flags would otherwise print a second one.
    .addOption(new Option('--methods <methods>', 'HTTP methods to forward, comma-separated (repeatable); others get 405. Each one added lets whoever has the channel URL call it on your app').argParser(collect).default([], 'POST'))
    .addOption(new Option('--events <names>', 'only these X-Service-Event names, comma-separated (repeatable)').argParser(collect).default([], 'every event'))
    .option('--replay <ref>', 'resend a buffered event (sequence number or delivery id) to the local URL, then go on listening')
    .option('--json', 'print one JSON object per line instead of text')
    .option('--channel <id>', 'use this channel instead of the one kept in --state (needs --token)')
    .addOption(new Option('--token <token>', 'the listening token of --channel').env('CLIPHOOK_LISTEN_TOKEN'))
    .addOption(new Option('--admin-token <token>', "the relay's admin token, to create the channel").env('CLIPHOOK_ADMIN_TOKEN'))
    .option('--state <file>', 'where the channel made by listen is kept, so its URL stays the same', '.cliphook/listen.json')
    .option('--inspect <port>', 'serve the inspector (every webhook, its reply, Replay) on 127.0.0.1:<port>; 0 picks a free port', '0')
    .option('--no-inspect', NO_INSPECT_HELP)
    .action(async (options) => (await import('./commands/listen.js')).listen(options));
}

function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the Clip and Image Generation Service, simulated: the whole v1 API with state, webhooks and a test clock')
    .option('--port <port>', 'port to listen on', '8080')
    .option('--host <host>', 'address to bind; one that is not loopback needs --open', '127.0.0.1')
    .option('--open', 'allow a --host that is not loopback (0.0.0.0 in a container): anyone who reaches it can use /test_helpers, /settings and the OAuth registration')
    .option('--data <file>', 'the data file (accounts, keys, tasks, idempotency records) kept across restarts', '.cliphook/service.json')
    .addOption(new Option('--speed <speed>', 'fast (a few seconds) or realistic (1-2 minutes, as the real service)').choices(['fast', 'realistic']).default('fast'))
    .option('--strict', "the spec's rules local development relaxes: https-only callbacks and image URLs, no private addresses")
    .option('--no-assistant', 'turn off the assistant endpoint (MCP) at /mcp: it answers 404, and /mcp/status says disabled')
    .option('--media-redirect', 'answer a good signed media link (GET /v1/media/…) with 302 to a short-lived /storage link, as spec 4.18 allows, so a client follows a redirect')
    .addOption(new Option('--api-key <key>', "fix the first account's API key").env('CLIPHOOK_API_KEY'))
    .addOption(new Option('--webhook-secret <secret>', "fix that key's webhook signing secret").env('CLIPHOOK_WEBHOOK_SECRET'))
    .addOption(new Option('--balance <credits>', "fix the first account's balance").env('CLIPHOOK_BALANCE'))
    .addOption(new Option('--admin-token <token>', 'fix the test helpers\' admin token (default: a new one at each start, printed)').env('CLIPHOOK_ADMIN_TOKEN'))
    .option('--public-url <url>', 'the origin clients reach the service at, for poll_url and signed links (default: the bound address)')
    .option('--seed <file>', 'make the accounts, assets, clips and image jobs of a JSON fixture at start and at each reset (docs/service.md, "Seed")')
    .option('--json', 'print the start-up line as JSON')
    .addOption(new Option('--redis <url>', 'share rate limits, Idempotency-Keys and webhook delivery with every serve process on this Redis (redis://host:port)').env('CLIPHOOK_REDIS_URL'))
    .option('--inspect <port>', "serve the inspector (clips, image jobs, the webhook deliveries and Redeliver) on 127.0.0.1:<port>, whatever --host is; 0 picks a free port", '0')
    .option('--no-inspect', NO_INSPECT_HELP)
    .action(async (options) => (await import('./commands/serve.js')).serve(options));
}

function registerService(program: Command): void {
  program
    .command('service')
    .description(
      'account settings, the test clock and the test helpers of a running cliphook serve: top-up <credits>, keys [list|create|revoke <id>], rotate-secret <key id>, advance <seconds>, ' +
        "accounts [list|create|delete <id>], reset, seed <file.json>, requests [list|clear], faults [list|add '<rule JSON>'|delete <id>], webhook-chaos <mode,…|none>",
    )
    .argument('<action>', 'top-up, keys, rotate-secret, advance, accounts, reset, seed, requests, faults or webhook-chaos')
    .argument('[args...]', 'the action\'s arguments')
    .addOption(new Option('--url <url>', 'the service').env('CLIPHOOK_SERVICE_URL').default('http://127.0.0.1:8080'))
    .addOption(new Option('--api-key <key>', 'an API key of the account (default: the key in the data file of serve, --data)').env('CLIPHOOK_API_KEY'))
    .addOption(new Option('--admin-token <token>', "the admin token serve printed (admin_token): needed by accounts, reset and seed; with requests, faults, webhook-chaos and advance it acts for every account").env('CLIPHOOK_ADMIN_TOKEN'))
    .option('--data <file>', "serve's data file, read for its key when --api-key is not given", '.cliphook/service.json')
    .option('--name <name>', 'accounts create: the new account\'s name')
    .option('--balance <credits>', 'accounts create: its starting balance (default: serve\'s --balance)')
    .option('--account <id>', 'advance, requests, faults list, webhook-chaos: this account only (with --admin-token)')
    .option('--method <method>', 'requests: only this HTTP method')
    .option('--path <path>', 'requests: only this path, or a path template such as /v1/videos/{id}')
    .option('--operation <id>', 'requests: only this operation (createVideo, getVideo, …)')
    .option('--status <status>', 'requests: only this status')
    .option('--limit <n>', 'requests: at most this many, newest first')
    .option('--json', 'print the answer as JSON')
    .action(async (action: string, args: string[], options) => (await import('./commands/service.js')).serviceCommand(action, args, options));
}

function registerDev(program: Command): void {
  program
    .command('dev')
    .description('run the service, a relay, listen and a receiver together, and watch a webhook travel through them (npm start)')
    .option('--port <port>', "the service's port (a free one if taken)", '8080')
    .option('--relay-port <port>', "the relay's port (a free one if taken)", '8787')
    .option('--receiver-port <port>', "the receiver's port (a free one if taken)", '3000')
    .option('--data <dir>', 'where the service, the relay and the receiver keep their files', '.cliphook/dev')
    .addOption(new Option('--speed <speed>', 'fast or realistic').choices(['fast', 'realistic']).default('fast'))
    .option('--inspect <port>', "serve the inspector (the webhooks listen received, and the service's clips, image jobs and deliveries) on 127.0.0.1:<port>; 0 picks a free port", '0')
    .option('--no-inspect', NO_INSPECT_HELP)
    .action(async (options) => (await import('./commands/dev.js')).dev(options));
}

function registerOpenApi(program: Command): void {
  program
    .command('openapi')
    .description("print the service's OpenAPI 3.1 document (what GET /v1/openapi.json serves)")
    .option('--origin <url>', 'the server URL the document names', 'http://127.0.0.1:8080')
    .action(async (options) => (await import('./commands/openapi.js')).openapi(options));
}

function registerReconcile(program: Command): void {
  program
    .command('reconcile')
    .description("deliver, signed, the event of every clip that ended since --since (read from the service's GET /videos) to a webhook URL: what an outage missed; the receiver's dedupe drops what it had")
    // Required, but checked by the command, so a missing one is a one-line usage error (exit 2).
    .addOption(new Option('--api-key <key>', "the account's API key (required)").env('CLIPHOOK_API_KEY'))
    .option('--url <url>', "the service's base URL with /v1, e.g. https://api.example.com/v1 (required)")
    .option('--to <url>', 'the webhook URL to deliver to: https, or http on a loopback address (required)')
    .addOption(new Option('--secret <secret>', 'the signing secret (required)').env('CLIPHOOK_SECRET'))
    .option('--since <when>', 'clips that ended since: a duration back from now (90m, 3h, 2d) or an ISO 8601 time', '24h')
    .option('--timeout <ms>', 'time allowed per POST', '10000')
    .action(async (options) => (await import('./commands/reconcile.js')).reconcile(options));
}
