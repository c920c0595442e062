// The Redis inbox's Lua scripts: each operation is one atomic round trip, whatever the number of
// processes sharing the inbox. Keys are built from the prefix in ARGV[1]: `<p>r:<id>` a record's hash,
// `<p>pending` (score: due time), `<p>running` (score: lease end), `<p>dead` and `<p>done` (score: end).
// Not for Redis Cluster: the scripts touch keys they are not given in KEYS.

// `<p>bytes` counts the body bytes of pending and running records, for `maxPendingBytes`;
// each record keeps its own in its `bytes` field. ARGV: prefix, id, maxPending, due, maxPendingBytes (-1: none), bytes, field, value, …
export const ADD = `local p = ARGV[1] local r = p .. 'r:' .. ARGV[2]
if redis.call('EXISTS', r) == 1 then return 'exists' end
if redis.call('ZCARD', p .. 'pending') + redis.call('ZCARD', p .. 'running') >= tonumber(ARGV[3]) then return 'full' end
local mb = tonumber(ARGV[5])
if mb >= 0 and tonumber(redis.call('GET', p .. 'bytes') or '0') + tonumber(ARGV[6]) > mb then return 'full' end
redis.call('HSET', r, 'bytes', ARGV[6], unpack(ARGV, 7))
redis.call('INCRBY', p .. 'bytes', ARGV[6])
redis.call('ZADD', p .. 'pending', ARGV[4], ARGV[2])
return 'added'`;

// Drops the dead records past keepDead (count) or keepDeadMs (age), -1 for no bound, oldest first, and
// answers them (their hashes) so that each drop is told. Pending and running records are never touched.
const TRIM_DEAD = `local function trimDead(p, now, keep, keepMs)
  local old = {}
  if keepMs >= 0 then old = redis.call('ZRANGEBYSCORE', p .. 'dead', '-inf', '(' .. (now - keepMs)) end
  if keep >= 0 then
    local over = redis.call('ZCARD', p .. 'dead') - #old - keep
    if over > 0 then for _, x in ipairs(redis.call('ZRANGE', p .. 'dead', #old, #old + over - 1)) do table.insert(old, x) end end
  end
  local out = {}
  for _, x in ipairs(old) do
    table.insert(out, redis.call('HGETALL', p .. 'r:' .. x))
    redis.call('DEL', p .. 'r:' .. x)
    redis.call('ZREM', p .. 'dead', x)
  end
  return out
end
`;

// Running records whose lease ended first (their worker died: "stalled"), then due pending ones. A
// stalled record's run counts: once it had maxAttempts runs it is dead, not claimed (BullMQ's
// maxStalledCount). Answers {claimed records, dead records dropped}.
// ARGV: prefix, now, lease end, owner, limit, maxAttempts (-1: no bound), error text, keepDead, keepDeadMs.
export const CLAIM = `${TRIM_DEAD}local p = ARGV[1] local n = tonumber(ARGV[5]) local max = tonumber(ARGV[6])
local died = false
local ids = redis.call('ZRANGEBYSCORE', p .. 'running', '-inf', ARGV[2], 'LIMIT', 0, n)
local stalled = #ids
if #ids < n then
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', p .. 'pending', '-inf', ARGV[2], 'LIMIT', 0, n - #ids)) do table.insert(ids, id) end
end
local out = {}
for i, id in ipairs(ids) do
  local r = p .. 'r:' .. id
  redis.call('ZREM', p .. 'pending', id)
  redis.call('ZREM', p .. 'running', id)
  if redis.call('EXISTS', r) == 1 then
    local runs = tonumber(redis.call('HGET', r, 'attempts') or '0')
    if i <= stalled and max >= 0 and runs >= max then
      redis.call('HDEL', r, 'owner', 'leaseUntil')
      redis.call('HSET', r, 'state', 'dead', 'nextAttemptAt', '', 'finishedAt', ARGV[2], 'lastError', string.format(ARGV[7], runs, max))
      redis.call('ZADD', p .. 'dead', ARGV[2], id)
      redis.call('DECRBY', p .. 'bytes', redis.call('HGET', r, 'bytes') or 0)
      died = true
    else
      redis.call('HINCRBY', r, 'attempts', 1)
      redis.call('HSET', r, 'state', 'running', 'owner', ARGV[4], 'leaseUntil', ARGV[3], 'nextAttemptAt', '')
      redis.call('ZADD', p .. 'running', ARGV[3], id)
      table.insert(out, redis.call('HGETALL', r))
    end
  end
end
local dropped = {}
if died then dropped = trimDead(p, tonumber(ARGV[2]), tonumber(ARGV[8]), tonumber(ARGV[9])) end
return {out, dropped}`;

// Only the owner of an unexpired-or-not lease writes the outcome; done records past keepDone or
// keepDoneMs, and dead ones past keepDead or keepDeadMs, are dropped in the same step. Answers {0} when the
// owner lost the lease, else {1, dead records dropped}.
// ARGV: prefix, id, owner, state, score, now, keepDone, keepDoneMs, keepDead, keepDeadMs, field, value, …
export const SETTLE = `${TRIM_DEAD}local p = ARGV[1] local id = ARGV[2] local r = p .. 'r:' .. id
if redis.call('HGET', r, 'state') ~= 'running' or redis.call('HGET', r, 'owner') ~= ARGV[3] then return {0} end
redis.call('ZREM', p .. 'running', id)
redis.call('HDEL', r, 'owner', 'leaseUntil')
redis.call('HSET', r, 'state', ARGV[4], unpack(ARGV, 11))
redis.call('ZADD', p .. ARGV[4], ARGV[5], id)
if ARGV[4] ~= 'pending' then redis.call('DECRBY', p .. 'bytes', redis.call('HGET', r, 'bytes') or 0) end
if ARGV[4] == 'done' then
  local old = redis.call('ZRANGEBYSCORE', p .. 'done', '-inf', '(' .. (tonumber(ARGV[6]) - tonumber(ARGV[8])))
  local over = redis.call('ZCARD', p .. 'done') - #old - tonumber(ARGV[7])
  if over > 0 then for _, x in ipairs(redis.call('ZRANGE', p .. 'done', #old, #old + over - 1)) do table.insert(old, x) end end
  for _, x in ipairs(old) do redis.call('DEL', p .. 'r:' .. x) redis.call('ZREM', p .. 'done', x) end
end
local dropped = {}
if ARGV[4] == 'dead' then dropped = trimDead(p, tonumber(ARGV[6]), tonumber(ARGV[9]), tonumber(ARGV[10])) end
return {1, dropped}`;

// ARGV: prefix, id, now.
export const REPLAY = `local p = ARGV[1] local id = ARGV[2] local r = p .. 'r:' .. id
local s = redis.call('HGET', r, 'state')
if not s then return 'missing' end
if s ~= 'dead' and s ~= 'done' then return s end
redis.call('ZREM', p .. s, id)
redis.call('HSET', r, 'state', 'pending', 'source', 'replay', 'attempts', 0, 'nextAttemptAt', ARGV[3], 'finishedAt', '', 'lastError', '')
redis.call('ZADD', p .. 'pending', ARGV[3], id)
redis.call('INCRBY', p .. 'bytes', redis.call('HGET', r, 'bytes') or 0)
return 'replayed'`;

// ARGV: prefix, id.
export const GET = `return redis.call('HGETALL', ARGV[1] .. 'r:' .. ARGV[2])`;

// Newest first by score. ARGV: prefix, state, limit.
export const LIST = `local p = ARGV[1] local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', p .. ARGV[2], 0, tonumber(ARGV[3]) - 1)) do
  local h = redis.call('HGETALL', p .. 'r:' .. id)
  if #h > 0 then table.insert(out, h) end
end
return out`;

// At most 1000 a call, so a large purge never holds Redis for long: the caller loops. ARGV: prefix, state, before.
export const PURGE = `local p = ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', p .. ARGV[2], '-inf', '(' .. ARGV[3], 'LIMIT', 0, 1000)
for _, id in ipairs(ids) do redis.call('DEL', p .. 'r:' .. id) redis.call('ZREM', p .. ARGV[2], id) end
return #ids`;

// ARGV: prefix. Answers the four counts and the earliest due time of pending and running ('' when none).
export const STATS = `local p = ARGV[1]
local due = ''
for _, s in ipairs({'pending', 'running'}) do
  local first = redis.call('ZRANGE', p .. s, 0, 0, 'WITHSCORES')
  if first[2] and (due == '' or tonumber(first[2]) < tonumber(due)) then due = first[2] end
end
return {redis.call('ZCARD', p .. 'pending'), redis.call('ZCARD', p .. 'running'), redis.call('ZCARD', p .. 'dead'), redis.call('ZCARD', p .. 'done'), due}`;

// A running handler keeps its claim (BullMQ extends a job's lock the same way). ARGV: prefix, id, owner, lease end.
export const EXTEND = `local p = ARGV[1] local r = p .. 'r:' .. ARGV[2]
if redis.call('HGET', r, 'state') ~= 'running' or redis.call('HGET', r, 'owner') ~= ARGV[3] then return 0 end
redis.call('HSET', r, 'leaseUntil', ARGV[4])
redis.call('ZADD', p .. 'running', ARGV[4], ARGV[2])
return 1`;
