-- exchange: add one process's counts of adaptive throttling to the fleet's,
-- and return the fleet's sums over the window for every host.
--
-- KEYS[1], a sorted set: the hosts with counts in the window, each scored
-- by the last step it was counted in.
-- KEYS[2], a hash: each host's ring of 20 steps, the field <host>|<step mod
-- 20> holding "<step> <attempts> <accepted> <refused>"; a field holding an
-- older step is an empty one.
--
-- ARGV[1] is the current step, ARGV[2] how long the keys live after this
-- exchange in milliseconds, ARGV[3] the most hosts kept, and ARGV[4] the
-- batch, a line per entry: "<attempts> <accepted> <refused> <healed> <host>\n"
-- with healed 1 or 0, applied in order. A healed entry first forgets the
-- host's counts, then adds its own.
--
-- Hosts last counted a window ago are dropped first, and after the batch
-- those least recently counted beyond the most kept. Returns a string, a
-- line per host with counts in the window:
-- "<attempts> <accepted> <refused> <host>\n".
local steps = 20
-- The most one step holds of a count: 20 of them stay exact in Lua's
-- numbers (2^53).
local most = 2^48
local now = tonumber(ARGV[1])
local hosts, counts = KEYS[1], KEYS[2]

local function fields(host)
  local f = {}
  for i = 0, steps - 1 do
    f[i + 1] = host .. '|' .. i
  end
  return f
end

-- slot returns the step and counts a field holds, or nil.
local function slot(v)
  if not v then
    return nil
  end
  local s, a, c, r = string.match(v, '^(%d+) (%d+) (%d+) (%d+)$')
  if not s then
    return nil
  end
  return tonumber(s), tonumber(a), tonumber(c), tonumber(r)
end

local function drop(list)
  for _, host in ipairs(list) do
    redis.call('HDEL', counts, unpack(fields(host)))
  end
end

-- Hosts last counted a window ago or earlier have nothing left to count.
local stale = redis.call('ZRANGEBYSCORE', hosts, '-inf', now - steps)
if #stale > 0 then
  drop(stale)
  redis.call('ZREMRANGEBYSCORE', hosts, '-inf', now - steps)
end

local at = '|' .. string.format('%d', now % steps)
for a, c, r, healed, host in string.gmatch(ARGV[4], '(%d+) (%d+) (%d+) ([01]) ([^\n]+)\n') do
  if healed == '1' then
    drop({host})
    redis.call('ZREM', hosts, host)
  end
  a, c, r = tonumber(a), tonumber(c), tonumber(r)
  if a + c + r > 0 then
    local field = host .. at
    local s, sa, sc, sr = slot(redis.call('HGET', counts, field))
    if s == now then
      a, c, r = a + sa, c + sc, r + sr
    end
    redis.call('HSET', counts, field, string.format('%d %d %d %d', now,
      math.min(a, most), math.min(c, most), math.min(r, most)))
    redis.call('ZADD', hosts, now, host)
  end
end

-- The least recently counted hosts make room.
local excess = redis.call('ZCARD', hosts) - tonumber(ARGV[3])
if excess > 0 then
  drop(redis.call('ZRANGE', hosts, 0, excess - 1))
  redis.call('ZREMRANGEBYRANK', hosts, 0, excess - 1)
end

local out = {}
for _, host in ipairs(redis.call('ZRANGE', hosts, 0, -1)) do
  local vals = redis.call('HMGET', counts, unpack(fields(host)))
  local a, c, r = 0, 0, 0
  for i = 1, steps do
    local s, sa, sc, sr = slot(vals[i])
    if s and s > now - steps and s <= now then
      a, c, r = a + sa, c + sc, r + sr
    end
  end
  if a + c + r > 0 then
    out[#out + 1] = string.format('%d %d %d ', a, c, r) .. host .. '\n'
  end
end
redis.call('PEXPIRE', hosts, ARGV[2])
redis.call('PEXPIRE', counts, ARGV[2])
return table.concat(out)
