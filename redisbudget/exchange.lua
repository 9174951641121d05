-- exchange: add one process's counts of adaptive throttling to the fleet's,
-- and return the fleet's sums over the window for every host.
--
-- KEYS[1], a sorted set: the hosts with counts in the window, each scored
-- by the last step it was counted in.
-- KEYS[2], a hash: a field per host, holding its sums over the window,
-- when a request was last sent to it while it was being refused (sent, in
-- Unix milliseconds, 0 for never), and the steps the sums add up, oldest
-- first, at most 20:
--
--   <asof> <attempts> <accepted> <refused> <sent>|<step> <attempts> <accepted> <refused>|...
--
-- The sums are those of the steps held, which are those in the window of
-- step asof: a later exchange drops the steps that have left the window
-- since from the front, and takes them off the sums. A host's sent goes
-- with its steps: it is kept, however old, while the host has steps in
-- the window, and forgotten with them.
--
-- ARGV[1] is the current step, ARGV[2] how long the keys live after this
-- exchange in milliseconds, ARGV[3] the most hosts kept, ARGV[5] the width
-- of a step in milliseconds, and ARGV[4] the batch, a line per entry:
-- "<attempts> <accepted> <refused> <healed> <sent> <host>\n" with healed 1
-- or 0 and sent 0 for none, applied in order. A healed entry first forgets
-- the host's counts and sent, then adds its own. A host keeps the latest
-- sent it is given while it has counts.
--
-- After the batch, the hosts counted least recently beyond the most kept
-- make room, and those whose steps have all left the window are dropped.
-- Returns a string, a line per host with counts in the window, at most the
-- most kept: "<attempts> <accepted> <refused> <sent> <host>\n".
--
-- No process's clock rules the others': a step or a sent ahead of Redis's
-- clock (TIME) by more than a step is taken as Redis's step and time plus
-- one step, so that a clock that runs ahead neither keeps its hosts over
-- the others' when the set is full nor writes steps that never leave the
-- window. A value that is unreadable, or whose steps are further ahead
-- still, a field of a host the set does not hold, and a key of another
-- type than the script's are dropped, so that nothing written by another
-- hand keeps the script from answering.
local steps = 20
-- The most one step holds of a count: 20 of them stay exact in Lua's
-- numbers (2^53).
local most = 2^48
local now = tonumber(ARGV[1])
local hosts, counts = KEYS[1], KEYS[2]
local latest = 2^53 -- the latest sent taken
local width = tonumber(ARGV[5])
if width and width > 0 then
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  now = math.min(now, math.floor(ms / width) + 1)
  latest = ms + width
end
for i, want in ipairs({'zset', 'hash'}) do
  if redis.call('TYPE', KEYS[i])['ok'] ~= want then
    redis.call('DEL', KEYS[i]) -- none, or another hand's
  end
end
local entry = '(%d+) (%d+) (%d+) (%d+)'
local head = '^(%d+) (%d+) (%d+) (%d+) (%d+)(|.*)$'

-- call runs command with the arguments in list, in batches that unpack
-- can take, each after the arguments in fixed.
local function call(command, fixed, list)
  for i = 1, #list, 1000 do
    local args = {}
    for _, a in ipairs(fixed) do
      args[#args + 1] = a
    end
    for j = i, math.min(i + 999, #list) do
      args[#args + 1] = list[j]
    end
    redis.call(command, unpack(args))
  end
end

-- current returns a host's step asof, sums, sent and steps, from its
-- field's value v, with the steps that have left the window by now
-- dropped. A missing or unreadable value, or one with no step left, is a
-- host with no counts (and no sent).
local function current(v)
  local asof, a, c, r, sent, ring
  if v then
    asof, a, c, r, sent, ring = string.match(v, head)
  end
  if not asof then
    return now, 0, 0, 0, 0, ''
  end
  asof, a, c, r, sent = tonumber(asof), tonumber(a), tonumber(c), tonumber(r), tonumber(sent)
  if asof > now + 1 then
    return now, 0, 0, 0, 0, '' -- written by a clock further ahead than any taken
  end
  if asof >= now then
    return asof, a, c, r, sent, ring
  end
  local pos = 1
  while true do
    local _, e, s, sa, sc, sr = string.find(ring, '^|' .. entry, pos)
    if not e or tonumber(s) > now - steps then
      break
    end
    a, c, r = a - sa, c - sc, r - sr
    pos = e + 1
  end
  ring = string.sub(ring, pos)
  if ring == '' then
    return now, 0, 0, 0, 0, ''
  end
  -- Sums that were not those of the steps (a value the script did not
  -- write) never fall below 0.
  return now, math.max(a, 0), math.max(c, 0), math.max(r, 0), sent, ring
end

local function value(asof, a, c, r, sent, ring)
  return string.format('%d %d %d %d %d', asof, a, c, r, sent) .. ring
end

-- added returns v with counts added to its current step: the last one
-- held if it is now or later (a clock a little ahead wrote it), or a new
-- one.
local function added(v, a, c, r)
  local asof, sa, sc, sr, sent, ring = current(v)
  local s, la, lc, lr
  local i = string.match(ring, '.*()|')
  if i then
    s, la, lc, lr = string.match(ring, '^|' .. entry .. '$', i)
  end
  if s and tonumber(s) >= now then
    ring = string.sub(ring, 1, i - 1)
    la, lc, lr = tonumber(la), tonumber(lc), tonumber(lr)
  else
    s, la, lc, lr = now, 0, 0, 0
  end
  local na, nc, nr = math.min(la + a, most), math.min(lc + c, most), math.min(lr + r, most)
  ring = ring .. string.format('|%d %d %d %d', s, na, nc, nr)
  return value(asof, sa + na - la, sc + nc - lc, sr + nr - lr, sent, ring)
end

-- withSent returns v, a value with counts, with its sent the later of its
-- own and sent.
local function withSent(v, sent)
  local front, own, ring = string.match(v, '^(%d+ %d+ %d+ %d+ )(%d+)(|.*)$')
  if not front or tonumber(own) >= sent then
    return v
  end
  return front .. string.format('%d', sent) .. ring
end

-- The hash is read once, changed here, and what changed written back.
local vals, known = {}, {}
local all = redis.call('HGETALL', counts)
for i = 1, #all, 2 do
  vals[all[i]] = all[i + 1]
  known[#known + 1] = all[i]
end

-- The batch, in order; the latest sent of each host since its last heal
-- in the batch applies after it, to the hosts then with counts.
local batch, counted, set, sents = {}, {}, {}, {}
for a, c, r, heal, sent, host in string.gmatch(ARGV[4], '(%d+) (%d+) (%d+) ([01]) (%d+) ([^\n]+)\n') do
  if heal == '1' then
    vals[host] = nil
    sents[host] = nil
  end
  a, c, r, sent = tonumber(a), tonumber(c), tonumber(r), math.min(tonumber(sent), latest)
  if a + c + r > 0 then
    vals[host] = added(vals[host], a, c, r)
    if not counted[host] then
      counted[host] = true
      known[#known + 1] = host
    end
  end
  if sent > (sents[host] or 0) then
    sents[host] = sent
  end
  batch[#batch + 1] = host
end
local changed = {}
for host in pairs(counted) do
  changed[host] = true
end
for host, sent in pairs(sents) do
  local v = vals[host]
  if v then
    vals[host] = withSent(v, sent)
    changed[host] = changed[host] or vals[host] ~= v
  end
end
-- The counts and sents added are the first write, so that a Redis out of
-- memory refuses them before anything else is written: Redis lets a
-- script that has written go on writing.
for host in pairs(changed) do
  if vals[host] then
    set[#set + 1] = host
    set[#set + 1] = vals[host]
  end
end
if #set > 0 then
  call('HSET', {counts}, set)
end

-- Each host of the batch is scored now if it was counted, or no longer
-- held if a heal left it nothing. Hosts last counted a window ago or
-- earlier have nothing left to count; their fields go below, with those of
-- the hosts whose steps have all left the window.
redis.call('ZREMRANGEBYSCORE', hosts, '-inf', now - steps)
local scored, unheld = {}, {}
for _, host in ipairs(batch) do
  if not vals[host] then
    unheld[#unheld + 1] = host
  elseif counted[host] then
    scored[#scored + 1] = now
    scored[#scored + 1] = host
  end
end
if #unheld > 0 then
  call('ZREM', {hosts}, unheld)
end
if #scored > 0 then
  call('ZADD', {hosts}, scored)
end

-- The least recently counted hosts make room.
local excess = redis.call('ZCARD', hosts) - tonumber(ARGV[3])
if excess > 0 then
  for _, host in ipairs(redis.call('ZRANGE', hosts, 0, excess - 1)) do
    vals[host] = nil
  end
  redis.call('ZREMRANGEBYRANK', hosts, 0, excess - 1)
end

-- The sums of each host the set holds, as of now: those of a host already
-- brought to this step are read as they are; the others are brought to
-- it. A field of a host the set does not hold goes.
local held = {}
for _, host in ipairs(redis.call('ZRANGE', hosts, 0, -1)) do
  held[host] = true
end
local out, gone = {}, {}
set = {}
for host, v in pairs(vals) do
  if not held[host] then
    vals[host] = nil
  end
end
for host, v in pairs(vals) do
  local asof, sums = string.match(v, '^(%d+) (%d+ %d+ %d+ %d+)|')
  if not asof or tonumber(asof) < now then
    local a, c, r, sent, ring
    asof, a, c, r, sent, ring = current(v)
    if ring == '' then
      vals[host] = nil
      gone[#gone + 1] = host
      sums = nil
    else
      vals[host] = value(asof, a, c, r, sent, ring)
      set[#set + 1] = host
      set[#set + 1] = vals[host]
      sums = string.format('%d %d %d %d', a, c, r, sent)
    end
  end
  if sums then
    out[#out + 1] = sums .. ' ' .. host .. '\n'
  end
end
if #set > 0 then
  call('HSET', {counts}, set)
end
if #gone > 0 then
  call('ZREM', {hosts}, gone)
end
local del = {}
for _, host in ipairs(known) do
  if not vals[host] then
    del[#del + 1] = host
  end
end
if #del > 0 then
  call('HDEL', {counts}, del)
end
redis.call('PEXPIRE', hosts, ARGV[2])
redis.call('PEXPIRE', counts, ARGV[2])
return table.concat(out)
