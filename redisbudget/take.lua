-- take: withdraw ARGV[1] milli-tokens from the bucket at KEYS[1] if it holds
-- at least that many.
--
-- A missing key is a full bucket of ARGV[2] milli-tokens, so a bucket that
-- becomes full is deleted rather than stored. A stored bucket expires
-- ARGV[3] milliseconds after it was last asked. Returns {1, balance} when the
-- cost was taken and {0, balance} when it was not, balance being what the
-- bucket holds afterwards.
local cost = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local stored = redis.call('GET', KEYS[1])
local balance = capacity
if stored then
  local n = tonumber(stored)
  if n then
    balance = math.max(0, math.min(n, capacity))
  end
end
if balance < cost then
  if stored then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
  end
  return {0, balance}
end
balance = balance - cost
if balance < capacity then
  redis.call('SET', KEYS[1], string.format('%d', balance), 'PX', ARGV[3])
end
return {1, balance}
