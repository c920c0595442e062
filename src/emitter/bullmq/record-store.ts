import type { Redis } from 'ioredis';
import type { DeliveryRecord } from '../types.js';

/** A delivery as Redis holds it: the record every backend keeps, and what the processes agree on it by. */
export interface StoredRecord extends DeliveryRecord {
  /** Bumped by every write. A write names the version it read, so no process overwrites another's change. */
  v: number;
  /** Creation order across every process (one Redis counter), so `list()` is newest first everywhere. */
  seq: number;
  /** Redeliveries of the delivery after it had finished; each one runs as a BullMQ job of its own. */
  gen: number;
  /** The BullMQ job of the current round. A job that finds another id here is stale and sends nothing. */
  job: string;
}

/** A stored record as it was written, and what the write made retention forget. */
export interface Written {
  record: StoredRecord;
  /** Finished deliveries forgotten past `retainFinished`, oldest first. */
  gone: string[];
}

/** The Redis keys of one queue's records and the channel their changes are published on. */
export interface RecordKeys {
  records: string;
  finished: string;
  seq: string;
  channel: string;
}

export function recordKeys(prefix: string, name: string): RecordKeys {
  // BullMQ's own keys are `<prefix>:<name>:<type or job id>`; job ids start with `dlv_`, so `emitter` is free.
  const base = `${prefix}:${name}:emitter`;
  return { records: `${base}:records`, finished: `${base}:finished`, seq: `${base}:seq`, channel: `${base}:changes` };
}

/** The BullMQ job id of a delivery's round: the delivery id, then `<id>.<n>` for its n-th redelivery. */
export function jobIdOf(id: string, gen: number): string {
  return gen === 0 ? id : `${id}.${gen}`;
}

// Records are JSON that begins `{"v":<version>,"seq":<order>,`; the script owns those two numbers and
// takes the rest (the "tail") as it is, so Lua never decodes a record (cjson would turn [] into {}).
// KEYS: records, finished, seq. ARGV: id, version read (0: create unless it exists), stored tail, public
// tail (no secret), 1 when the record is finished, retainFinished, channel. Returns {1, stored, gone…}, or
// {0, current} when the version read is stale ({0} when there is no record).
const PUT = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local v, seq = 0, 0
if cur then
  local cv, cs = string.match(cur, '^{"v":(%d+),"seq":(%d+),')
  v, seq = tonumber(cv), tonumber(cs)
end
if tonumber(ARGV[2]) == 0 then
  if cur then return {0, cur} end
  seq = redis.call('INCR', KEYS[3])
elseif not cur then return {0}
elseif v ~= tonumber(ARGV[2]) then return {0, cur} end
local head = '{"v":' .. (v + 1) .. ',"seq":' .. seq .. ','
redis.call('HSET', KEYS[1], ARGV[1], head .. ARGV[3])
local gone = {}
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), ARGV[1])
  local excess = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[6])
  if excess > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[2], excess)
    for i = 1, #popped, 2 do
      gone[#gone + 1] = popped[i]
      redis.call('HDEL', KEYS[1], popped[i])
    end
  end
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
redis.call('PUBLISH', ARGV[7], head .. ARGV[4] .. '\\n' .. table.concat(gone, ','))
return {1, head .. ARGV[3], unpack(gone)}`;

// KEYS: records, finished. ARGV: id, version, channel. Deletes the record if it is still at that version.
const DROP = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or tonumber(string.match(cur, '^{"v":(%d+),')) ~= tonumber(ARGV[2]) then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], '\\n' .. ARGV[1])
return 1`;

interface Scripts {
  cliphookEmitterPut(...args: Array<string | number>): Promise<Array<number | string | null>>;
  cliphookEmitterDrop(...args: Array<string | number>): Promise<number>;
}

/**
 * The delivery records of one queue in a Redis hash, written with a version check (each write is one
 * Lua script: compare, write, trim retention, publish), so several processes change one delivery without
 * losing each other's changes. Every write is published on the queue's channel, without the secret.
 */
export class RedisRecordStore {
  readonly #redis: Redis & Scripts;
  readonly #keys: RecordKeys;
  readonly #retainFinished: number;

  constructor(redis: Redis, keys: RecordKeys, retainFinished: number) {
    if (typeof (redis as Partial<Scripts>).cliphookEmitterPut !== 'function') {
      redis.defineCommand('cliphookEmitterPut', { numberOfKeys: 3, lua: PUT });
      redis.defineCommand('cliphookEmitterDrop', { numberOfKeys: 2, lua: DROP });
    }
    this.#redis = redis as Redis & Scripts;
    this.#keys = keys;
    this.#retainFinished = retainFinished;
  }

  /** Stores a new record, unless one with its id exists: then returns that one, unchanged. */
  async create(record: Omit<StoredRecord, 'v' | 'seq'>): Promise<Written & { created: boolean }> {
    const [ok, stored, ...gone] = await this.#put(record.id, 0, { ...record, v: 0, seq: 0 });
    return { created: ok === 1, record: parseRecord(stored as string), gone: gone as string[] };
  }

  /**
   * Reads a record, changes it and writes it back; when another process wrote it in between, changes
   * what that one wrote instead. `change` returns `null` to leave the record as it is (`changed: false`).
   * Resolves with `undefined` when there is no such record.
   */
  async update(id: string, change: (record: StoredRecord) => StoredRecord | null): Promise<(Written & { changed: boolean; before: StoredRecord }) | undefined> {
    const text = await this.#redis.hget(this.#keys.records, id);
    let current = text === null ? undefined : parseRecord(text);
    for (let tries = 0; current; tries++) {
      if (tries > 1000) throw new Error(`Delivery ${id} keeps changing under this process; giving up after 1000 tries.`);
      const next = change(current);
      if (next === null) return { record: current, gone: [], changed: false, before: current };
      const [ok, stored, ...gone] = await this.#put(id, current.v, next);
      if (ok === 1) return { record: parseRecord(stored as string), gone: gone as string[], changed: true, before: current };
      current = stored == null ? undefined : parseRecord(stored as string);
    }
    return undefined;
  }

  /** Deletes a record if nobody changed it since version `v` (a `send()` whose job could not be queued). */
  async drop(id: string, v: number): Promise<boolean> {
    return (await this.#redis.cliphookEmitterDrop(this.#keys.records, this.#keys.finished, id, v, this.#keys.channel)) === 1;
  }

  /** Every stored record, in no particular order. */
  async loadAll(): Promise<StoredRecord[]> {
    const all = await this.#redis.hgetall(this.#keys.records);
    return Object.values(all).map(parseRecord);
  }

  #put(id: string, version: number, record: StoredRecord): Promise<Array<number | string | null>> {
    const { v: _v, seq: _seq, ...rest } = record;
    const finished = rest.state === 'delivered' || rest.state === 'failed';
    return this.#redis.cliphookEmitterPut(
      this.#keys.records, this.#keys.finished, this.#keys.seq,
      id, version, tail(rest), tail({ ...rest, secret: undefined }), finished ? 1 : 0, this.#retainFinished, this.#keys.channel,
    );
  }
}

/** A published change: the record as written (its `secret` is `''`), or `null`, and the ids forgotten. */
export function parseChange(message: string): { record: StoredRecord | null; gone: string[] } {
  const cut = message.indexOf('\n');
  const text = message.slice(0, cut);
  const gone = message.slice(cut + 1);
  return { record: text === '' ? null : parseRecord(text), gone: gone === '' ? [] : gone.split(',') };
}

function parseRecord(text: string): StoredRecord {
  const record = JSON.parse(text) as StoredRecord;
  record.secret ??= '';
  return record;
}

/** The JSON of an object without its opening brace, for the script to put its own head before. */
function tail(fields: object): string {
  return JSON.stringify(fields).slice(1);
}
