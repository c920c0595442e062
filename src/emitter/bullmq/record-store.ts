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
  /** Delivery id → the record's JSON, without its secret. */
  records: string;
  /** Delivery id → its signing secret, kept apart so no change ever publishes it. */
  secrets: string;
  finished: string;
  seq: string;
  channel: string;
}

export function recordKeys(prefix: string, name: string): RecordKeys {
  // BullMQ's own keys are `<prefix>:<name>:<type or job id>`; job ids start with `dlv_`, so `emitter` is free.
  const base = `${prefix}:${name}:emitter`;
  return { records: `${base}:records`, secrets: `${base}:secrets`, finished: `${base}:finished`, seq: `${base}:seq`, channel: `${base}:changes` };
}

/** The BullMQ job id of a delivery's round: the delivery id, then `<id>.<n>` for its n-th redelivery. */
export function jobIdOf(id: string, gen: number): string {
  return gen === 0 ? id : `${id}.${gen}`;
}

// A record is JSON that begins `{"v":<version>,"seq":<order>,"state":"…","job":"…","nextAttemptAt":…,`.
// The scripts own the version and the order and take the rest (the "tail") as it is, so Lua never decodes
// a record (cjson would turn [] into {}); BEGIN reads and rewrites the three fields after them.
const HEAD = `
local function head(cur)
  if not cur then return 0, 0 end
  local v, seq = string.match(cur, '^{"v":(%d+),"seq":(%d+),')
  return tonumber(v), tonumber(seq)
end
local function forget(ids)
  for _, id in ipairs(ids) do
    redis.call('HDEL', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
  end
end`;

// KEYS: records, secrets, finished, seq. ARGV: id, version read (0: create unless it exists), tail, secret
// (stored on create), 1 when the record is finished, retainFinished, channel. Returns {1, stored, gone…},
// or {0, current} when the version read is stale ({0} when there is no record).
const PUT = `${HEAD}
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local v, seq = head(cur)
if tonumber(ARGV[2]) == 0 then
  if cur then return {0, cur} end
  seq = redis.call('INCR', KEYS[4])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
elseif not cur then return {0}
elseif v ~= tonumber(ARGV[2]) then return {0, cur} end
local stored = '{"v":' .. (v + 1) .. ',"seq":' .. seq .. ',' .. ARGV[3]
redis.call('HSET', KEYS[1], ARGV[1], stored)
local gone = {}
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[4]), ARGV[1])
  local excess = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[6])
  if excess > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[3], excess)
    for i = 1, #popped, 2 do gone[#gone + 1] = popped[i] end
    forget(gone)
  end
else
  redis.call('ZREM', KEYS[3], ARGV[1])
end
redis.call('PUBLISH', ARGV[7], stored .. '\\n' .. table.concat(gone, ','))
return {1, stored, unpack(gone)}`;

// The start of an attempt in one round trip. KEYS: records, secrets. ARGV: id, job id, channel. When the
// record belongs to this job and waits (or was in flight on a worker that died), marks it delivering and
// returns {record, secret}; else nothing: the job is stale.
const BEGIN = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return false end
local v, seq, state, job, rest = string.match(cur, '^{"v":(%d+),"seq":(%d+),"state":"(%a+)","job":"([^"]*)","nextAttemptAt":[^,]*,(.*)$')
if job ~= ARGV[2] or (state ~= 'pending' and state ~= 'delivering') then return false end
local stored = '{"v":' .. (tonumber(v) + 1) .. ',"seq":' .. seq .. ',"state":"delivering","job":"' .. job .. '","nextAttemptAt":null,' .. rest
redis.call('HSET', KEYS[1], ARGV[1], stored)
redis.call('PUBLISH', ARGV[3], stored .. '\\n')
return {stored, redis.call('HGET', KEYS[2], ARGV[1]) or ''}`;

// KEYS: records, secrets, finished. ARGV: id, version, channel. Deletes the record if still at that version.
const DROP = `${HEAD}
if head(redis.call('HGET', KEYS[1], ARGV[1])) ~= tonumber(ARGV[2]) then return 0 end
forget({ARGV[1]})
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('PUBLISH', ARGV[3], '\\n' .. ARGV[1])
return 1`;

interface Scripts {
  cliphookEmitterPut(...args: Array<string | number>): Promise<Array<number | string | null>>;
  cliphookEmitterBegin(...args: Array<string | number>): Promise<[string, string] | null>;
  cliphookEmitterDrop(...args: Array<string | number>): Promise<number>;
}

/**
 * The delivery records of one queue in a Redis hash, written with a version check (each write is one
 * Lua script: compare, write, trim retention, publish), so several processes change one delivery without
 * losing each other's changes. Every write is published on the queue's channel; secrets are kept apart
 * and never published. Records read from here carry an empty `secret`, except the one `begin()` returns.
 */
export class RedisRecordStore {
  readonly #redis: Redis & Scripts;
  readonly #keys: RecordKeys;
  readonly #retainFinished: number;

  constructor(redis: Redis, keys: RecordKeys, retainFinished: number) {
    if (typeof (redis as Partial<Scripts>).cliphookEmitterPut !== 'function') {
      redis.defineCommand('cliphookEmitterPut', { numberOfKeys: 4, lua: PUT });
      redis.defineCommand('cliphookEmitterBegin', { numberOfKeys: 2, lua: BEGIN });
      redis.defineCommand('cliphookEmitterDrop', { numberOfKeys: 3, lua: DROP });
    }
    this.#redis = redis as Redis & Scripts;
    this.#keys = keys;
    this.#retainFinished = retainFinished;
  }

  /** Stores a new record and its secret, unless one with its id exists: then returns that one, unchanged. */
  async create(record: Omit<StoredRecord, 'v' | 'seq'>): Promise<Written & { created: boolean }> {
    const [ok, stored, ...gone] = await this.#put(record.id, 0, { ...record, v: 0, seq: 0 });
    // Written as given: only the order Redis gave it is new, read off the head, not by parsing the record.
    const written = ok === 1 ? { ...record, v: 1, seq: headOf(stored as string).seq, secret: '' } : parseRecord(stored as string);
    return { created: ok === 1, record: written, gone: gone as string[] };
  }

  /**
   * Marks the attempt of job `jobId` begun and returns the record with its secret, or `undefined` when the
   * job is stale (its delivery finished, was redelivered under a newer job, or was forgotten).
   */
  async begin(id: string, jobId: string): Promise<StoredRecord | undefined> {
    const { records, secrets, channel } = this.#keys;
    const found = await this.#redis.cliphookEmitterBegin(records, secrets, id, jobId, channel);
    return found ? { ...parseRecord(found[0]), secret: found[1] } : undefined;
  }

  /**
   * Reads a record (unless `known` is what this process last wrote), changes it and writes it back; when
   * another process wrote it in between, changes what that one wrote instead. `change` returns `null` to
   * leave the record as it is (`changed: false`). Resolves with `undefined` when there is no such record.
   */
  async update(id: string, change: (record: StoredRecord) => StoredRecord | null, known?: StoredRecord): Promise<(Written & { changed: boolean; before: StoredRecord }) | undefined> {
    let current = known;
    if (!current) {
      const text = await this.#redis.hget(this.#keys.records, id);
      current = text === null ? undefined : parseRecord(text);
    }
    for (let tries = 0; current; tries++) {
      if (tries > 1000) throw new Error(`Delivery ${id} keeps changing under this process; giving up after 1000 tries.`);
      const next = change(current);
      if (next === null) return { record: current, gone: [], changed: false, before: current };
      const [ok, stored, ...gone] = await this.#put(id, current.v, next);
      // Written as changed, one version on: parsing back the record just sent would cost a JSON.parse per write.
      if (ok === 1) return { record: { ...next, v: current.v + 1, seq: current.seq, secret: '' }, gone: gone as string[], changed: true, before: current };
      current = stored == null ? undefined : parseRecord(stored as string);
    }
    return undefined;
  }

  /** Deletes a record if nobody changed it since version `v` (a `send()` whose job could not be queued). */
  async drop(id: string, v: number): Promise<boolean> {
    const { records, secrets, finished, channel } = this.#keys;
    return (await this.#redis.cliphookEmitterDrop(records, secrets, finished, id, v, channel)) === 1;
  }

  /** Every stored record, in no particular order. */
  async loadAll(): Promise<StoredRecord[]> {
    const all = await this.#redis.hgetall(this.#keys.records);
    return Object.values(all).map(parseRecord);
  }

  #put(id: string, version: number, record: StoredRecord): Promise<Array<number | string | null>> {
    const { v: _v, seq: _seq, secret, state, job, nextAttemptAt, ...rest } = record;
    const finished = state === 'delivered' || state === 'failed';
    const { records, secrets, finished: finishedKey, seq, channel } = this.#keys;
    // The order BEGIN's pattern expects: state, job, nextAttemptAt, then the rest.
    const tail = JSON.stringify({ state, job, nextAttemptAt, ...rest }).slice(1);
    return this.#redis.cliphookEmitterPut(records, secrets, finishedKey, seq, id, version, tail, secret, finished ? 1 : 0, this.#retainFinished, channel);
  }
}

/**
 * A published change: the record as written (its `secret` is `''`), or `null`, and the ids forgotten.
 * `known` answers the version this process holds of a delivery: a change no newer is not parsed at all
 * (else every process would parse the echo of each of its own writes, three per delivery).
 */
export function parseChange(message: string, known?: (head: { v: number; job: string }) => boolean): { record: StoredRecord | null; gone: string[] } {
  const cut = message.indexOf('\n');
  const text = message.slice(0, cut);
  const gone = message.slice(cut + 1);
  const ids = gone === '' ? [] : gone.split(',');
  if (text === '') return { record: null, gone: ids };
  const head = known && HEAD_OF_RECORD.exec(text);
  if (head && known({ v: Number(head[1]), job: head[3]! })) return { record: null, gone: ids };
  return { record: parseRecord(text), gone: ids };
}

// The head every stored record starts with (PUT and BEGIN write it so); a job id with escapes is parsed whole.
const HEAD_OF_RECORD = /^\{"v":(\d+),"seq":(\d+),"state":"[a-z]+","job":"([^"\\]*)",/;

/** A stored record's version and order, read off its head. */
function headOf(text: string): { v: number; seq: number } {
  const head = /^\{"v":(\d+),"seq":(\d+),/.exec(text);
  if (!head) return parseRecord(text);
  return { v: Number(head[1]), seq: Number(head[2]) };
}

function parseRecord(text: string): StoredRecord {
  const record = JSON.parse(text) as StoredRecord;
  record.secret = '';
  return record;
}
