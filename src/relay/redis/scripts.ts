/**
 * The relay's Lua scripts: each operation on a channel is one script, so it is atomic across every relay
 * process sharing the Redis, in one round trip. ARGV[1] is the key prefix and ARGV[2] the channel id.
 *
 * Keys (P = prefix): `P channels` (set of ids), `P bytes` (base64 body bytes buffered in all), `P acked`
 * (zset of `<channel> <seq>` by receivedAt: what may go to make room, relay-wide); per channel `P c:<id>`
 * (hash: token hash, created, seq = the last number handed out, bytes), `:ev` (seq → packed event),
 * `:ix` (zset of seqs, in order), `:m` (seq → `receivedAt|size|` plus `=<delivery id>` if any), `:ack`
 * (set of acknowledged seqs), `:dl` (delivery id → its unacknowledged copy), `:last` (delivery id → its
 * latest copy, for --replay), `:who` (zset of `<process>|<filter>` by expiry: the listeners connected).
 * The scripts derive keys from the prefix (freeing room relay-wide touches any channel's keys), so the
 * relay wants one Redis (a primary, with replicas if you like), not Redis Cluster.
 */

const LIB = `
local P = ARGV[1]
local function ck(id) return P .. 'c:' .. id end
local function meta(id, seq)
  local m = redis.call('HGET', ck(id) .. ':m', seq)
  if not m then return nil end
  local a = string.find(m, '|', 1, true)
  local b = string.find(m, '|', a + 1, true)
  local d = string.sub(m, b + 1)
  return tonumber(string.sub(m, 1, a - 1)), tonumber(string.sub(m, a + 1, b - 1)), (d ~= '' and string.sub(d, 2) or nil)
end
local function drop(id, seq)
  local c = ck(id)
  redis.call('ZREM', P .. 'acked', id .. ' ' .. seq)
  local at, size, delivery = meta(id, seq)
  if not at then return 0 end
  redis.call('HDEL', c .. ':ev', seq)
  redis.call('HDEL', c .. ':m', seq)
  redis.call('ZREM', c .. ':ix', seq)
  redis.call('SREM', c .. ':ack', seq)
  if delivery then
    if redis.call('HGET', c .. ':dl', delivery) == seq then redis.call('HDEL', c .. ':dl', delivery) end
    if redis.call('HGET', c .. ':last', delivery) == seq then redis.call('HDEL', c .. ':last', delivery) end
  end
  redis.call('HINCRBY', c, 'bytes', 0 - size) -- not -size: -0 is no integer to Redis
  redis.call('DECRBY', P .. 'bytes', size)
  return size
end
-- The file store's rule: drop events past the age bound and, to make room for incoming bytes within the
-- count and byte bounds, acknowledged ones oldest first, a tenth of each bound at once.
local function prune(id, now, maxEvents, maxBytes, maxAge, incoming)
  local c = ck(id)
  local count = redis.call('ZCARD', c .. ':ix')
  local bytes = tonumber(redis.call('HGET', c, 'bytes') or '0')
  local cutoff = now - maxAge
  local oldest = redis.call('ZRANGE', c .. ':ix', 0, 0)[1]
  local oldestAt = oldest and meta(id, oldest) or nil
  if count < maxEvents and bytes + incoming <= maxBytes and (oldestAt == nil or oldestAt >= cutoff) then return end
  local extraCount = count - maxEvents + math.max(1, math.floor(maxEvents / 10))
  local extraBytes = bytes + incoming - maxBytes + math.floor(maxBytes / 10)
  for _, seq in ipairs(redis.call('ZRANGE', c .. ':ix', 0, -1)) do
    local at, size = meta(id, seq)
    local acked = redis.call('SISMEMBER', c .. ':ack', seq) == 1
    if at and (at < cutoff or (acked and (extraCount > 0 or extraBytes > 0))) then
      extraCount = extraCount - 1
      extraBytes = extraBytes - size
      drop(id, seq)
    end
  end
end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

const script = (body: string) => `${LIB}\n${body}`;

/** ARGV[3] token hash, [4] createdAt, [5] maxChannels → 1, or 0 at maxChannels. */
export const CREATE = script(`
if redis.call('SCARD', P .. 'channels') >= tonumber(ARGV[5]) then return 0 end
redis.call('SADD', P .. 'channels', ARGV[2])
redis.call('HSET', ck(ARGV[2]), 'token', ARGV[3], 'created', ARGV[4], 'seq', 0, 'bytes', 0)
return 1`);

/** → 1, or 0 when there was no such channel. */
export const DELETE = script(`
local id = ARGV[2]
local c = ck(id)
if redis.call('EXISTS', c) == 0 then return 0 end
for _, seq in ipairs(redis.call('SMEMBERS', c .. ':ack')) do redis.call('ZREM', P .. 'acked', id .. ' ' .. seq) end
redis.call('DECRBY', P .. 'bytes', tonumber(redis.call('HGET', c, 'bytes') or '0'))
redis.call('DEL', c, c .. ':ev', c .. ':m', c .. ':ix', c .. ':ack', c .. ':dl', c .. ':last', c .. ':who')
redis.call('SREM', P .. 'channels', id)
return 1`);

/**
 * ARGV[3] now, [4] maxEvents, [5] maxBytes, [6] maxAgeMs, [7] maxTotalBytes, [8] size (base64 bytes),
 * [9] receivedAt, [10] '' or '=<delivery id>', [11] '' or '=<event name>', [12] this process's id,
 * [13] what its own listeners make of it, [14] the packed event.
 * → {'stored', seq, remote (1 when a listener of another process wants it)} | {'filtered'} | {'not_found'} | {'full', why}
 */
export const APPEND = script(`
local id, now = ARGV[2], tonumber(ARGV[3])
local maxEvents, maxBytes, maxAge, maxTotal = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local size = tonumber(ARGV[8])
local delivery = ARGV[10] ~= '' and string.sub(ARGV[10], 2) or nil
local name = ARGV[11] ~= '' and string.sub(ARGV[11], 2) or nil
local c = ck(id)
if redis.call('EXISTS', c) == 0 then return {'not_found'} end
-- Who would take it, across processes: the live members of the channel's presence.
local members = redis.call('ZRANGEBYSCORE', c .. ':who', nowMs(), '+inf')
local wanted, remote = ARGV[13] == 'wanted', false
for _, member in ipairs(members) do
  local bar = string.find(member, '|', 1, true)
  local filter = string.sub(member, bar + 1)
  if filter == '*' or (name and not string.find(name, ',', 1, true) and string.find(',' .. filter .. ',', ',' .. name .. ',', 1, true)) then
    wanted = true
    if string.sub(member, 1, bar - 1) ~= ARGV[12] then remote = true end
  end
end
if not wanted then
  if ARGV[13] == 'filtered' then return {'filtered'} end
  -- Members a process left when it died outlive it by their expiry; a live process is subscribed.
  if #members > 0 and redis.call('PUBSUB', 'NUMSUB', P .. 'ev:' .. id)[2] > 0 then return {'filtered'} end
end
if delivery then
  local copy = redis.call('HGET', c .. ':dl', delivery)
  if copy then drop(id, copy) end
end
prune(id, now, maxEvents, maxBytes, maxAge, size)
if redis.call('ZCARD', c .. ':ix') >= maxEvents then return {'full', 'channel_events'} end
if tonumber(redis.call('HGET', c, 'bytes') or '0') + size > maxBytes then return {'full', 'channel_bytes'} end
local total = tonumber(redis.call('GET', P .. 'bytes') or '0')
if total + size > maxTotal then
  local need, freed = total + size - maxTotal, 0
  while freed < need do
    local batch = redis.call('ZRANGE', P .. 'acked', 0, 99)
    if #batch == 0 then return {'full', 'relay_bytes'} end
    for _, member in ipairs(batch) do
      local space = string.find(member, ' ', 1, true)
      freed = freed + drop(string.sub(member, 1, space - 1), string.sub(member, space + 1))
      if freed >= need then break end
    end
  end
end
local seq = tostring(redis.call('HINCRBY', c, 'seq', 1))
redis.call('HSET', c .. ':ev', seq, ARGV[14])
redis.call('HSET', c .. ':m', seq, ARGV[9] .. '|' .. ARGV[8] .. '|' .. ARGV[10])
redis.call('ZADD', c .. ':ix', seq, seq)
redis.call('HINCRBY', c, 'bytes', size)
redis.call('INCRBY', P .. 'bytes', size)
if delivery then
  redis.call('HSET', c .. ':dl', delivery, seq)
  redis.call('HSET', c .. ':last', delivery, seq)
end
return {'stored', tonumber(seq), remote and 1 or 0}`);

/** ARGV[3] seq → 1 when newly acknowledged. */
export const ACK = script(`
local id, seq = ARGV[2], ARGV[3]
local c = ck(id)
if redis.call('SISMEMBER', c .. ':ack', seq) == 1 then return 0 end
local at, _, delivery = meta(id, seq)
if not at then return 0 end
redis.call('SADD', c .. ':ack', seq)
redis.call('ZADD', P .. 'acked', at, id .. ' ' .. seq)
if delivery and redis.call('HGET', c .. ':dl', delivery) == seq then redis.call('HDEL', c .. ':dl', delivery) end
return 1`);

/** ARGV[3] now, [4] maxEvents, [5] maxBytes, [6] maxAgeMs → {seq, packed event, …} of the unacknowledged events, oldest first. */
export const UNACKED = script(`
local id = ARGV[2]
local c = ck(id)
if redis.call('EXISTS', c) == 0 then return {} end
prune(id, tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), 0)
local out = {}
for _, seq in ipairs(redis.call('ZRANGE', c .. ':ix', 0, -1)) do
  if redis.call('SISMEMBER', c .. ':ack', seq) == 0 then
    out[#out + 1] = seq
    out[#out + 1] = redis.call('HGET', c .. ':ev', seq)
  end
end
return out`);

/** ARGV[3] a sequence number or a delivery id → {seq, packed event} of the latest event it names, or nil. */
export const FIND = script(`
local c = ck(ARGV[2])
local ref = ARGV[3]
local best = redis.call('HGET', c .. ':last', ref)
if string.match(ref, '^%d+$') and redis.call('HEXISTS', c .. ':ev', ref) == 1 and (not best or tonumber(ref) > tonumber(best)) then best = ref end
if not best then return nil end
local payload = redis.call('HGET', c .. ':ev', best)
if not payload then return nil end
return {best, payload}`);

/** ARGV[3] ttl ms, [4] how many members follow to add, then those, then members to remove. */
export const PRESENCE = script(`
local c = ck(ARGV[2])
if redis.call('EXISTS', c) == 0 then return 0 end
local who, now, adds = c .. ':who', nowMs(), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', who, '-inf', '(' .. now)
for i = 5, 4 + adds do redis.call('ZADD', who, now + tonumber(ARGV[3]), ARGV[i]) end
for i = 5 + adds, #ARGV do redis.call('ZREM', who, ARGV[i]) end
return 1`);

/** → {channels, buffered bytes}. */
export const STATS = script(`return {redis.call('SCARD', P .. 'channels'), tonumber(redis.call('GET', P .. 'bytes') or '0')}`);

export const SCRIPTS = { CREATE, DELETE, APPEND, ACK, UNACKED, FIND, PRESENCE, STATS } as const;
export type ScriptName = keyof typeof SCRIPTS;
