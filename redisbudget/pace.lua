-- pace: record one member's reports of the hosts it paces, and return the
-- fleet's view of every host a member reported within its lease.
--
-- KEYS[1], a hash: a field per host and member, "<key> <member>", holding
-- that member's last report, its times on Redis's clock in milliseconds:
--
--   <until> <demand> <cut> <hold> <quota>
--
-- until is when the report's lease ends, cut when the member last had a
-- request throttled (-1 for never), hold when the wait it was asked for
-- ends (0 for none), quota the rate its quota allows the fleet (0 for none).
--
-- ARGV[1] is the member, ARGV[2] the lease in milliseconds, ARGV[3] the
-- most fields kept, and ARGV[4] the batch, a line per report, its times
-- relative to the member's clock so that clocks that disagree do not
-- matter: "<demand> <cut ago, or -1> <hold in, or 0> <quota> <key>\n". A
-- line that does not read is skipped; a new field past the most kept is
-- not stored.
--
-- Fields whose lease has ended are deleted. Returns a string, a line per
-- host: "<demand> <cut ago, or -1> <hold in, or 0> <quota> <members> <key>\n",
-- demand summed over the members, the latest cut and hold, the least quota
-- above 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local member, lease, most = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

for line in string.gmatch(ARGV[4], '[^\n]+') do
  local demand, ago, hold, quota, key = string.match(line, '^(%S+) (%S+) (%S+) (%S+) (%S+)$')
  demand, ago, hold, quota = tonumber(demand), tonumber(ago), tonumber(hold), tonumber(quota)
  if key and demand and ago and hold and quota then
    local cut = -1
    if ago >= 0 then cut = now - ago end
    local heldTo = 0
    if hold > 0 then heldTo = now + hold end
    local field = key .. ' ' .. member
    if redis.call('HEXISTS', KEYS[1], field) == 1 or redis.call('HLEN', KEYS[1]) < most then
      redis.call('HSET', KEYS[1], field,
        string.format('%d %.17g %d %d %.17g', now + lease, demand, cut, heldTo, quota))
    end
  end
end

local all = redis.call('HGETALL', KEYS[1])
local fleet, order = {}, {}
for i = 1, #all, 2 do
  local field, v = all[i], all[i + 1]
  local untilAt, demand, cut, hold, quota = string.match(v, '^(%S+) (%S+) (%S+) (%S+) (%S+)$')
  local key = string.match(field, '^(%S+) %S+$')
  untilAt, demand, cut, hold, quota = tonumber(untilAt), tonumber(demand), tonumber(cut), tonumber(hold), tonumber(quota)
  if not (key and untilAt and demand and cut and hold and quota) or untilAt < now then
    redis.call('HDEL', KEYS[1], field)
  else
    local f = fleet[key]
    if not f then
      f = {demand = 0, cut = -1, hold = 0, quota = 0, members = 0}
      fleet[key] = f
      order[#order + 1] = key
    end
    f.demand = f.demand + demand
    if cut > f.cut then f.cut = cut end
    if hold > f.hold then f.hold = hold end
    if quota > 0 and (f.quota == 0 or quota < f.quota) then f.quota = quota end
    f.members = f.members + 1
  end
end
redis.call('PEXPIRE', KEYS[1], lease * 2)

local out = {}
for _, key in ipairs(order) do
  local f = fleet[key]
  local ago, hold = -1, 0
  if f.cut >= 0 then ago = math.max(now - f.cut, 0) end
  if f.hold > now then hold = f.hold - now end
  out[#out + 1] = string.format('%.17g %d %d %.17g %d %s\n', f.demand, ago, hold, f.quota, f.members, key)
end
return table.concat(out)
