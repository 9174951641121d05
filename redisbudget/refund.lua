-- refund: put ARGV[1] milli-tokens back into the bucket at KEYS[1], up to its
-- capacity of ARGV[2] milli-tokens.
--
-- A missing key is a full bucket, which a refund leaves alone; a bucket that
-- becomes full is deleted. A stored bucket expires ARGV[3] milliseconds after
-- it was last used. Returns the balance afterwards.
local capacity = tonumber(ARGV[2])
local stored = redis.call('GET', KEYS[1])
if not stored then
  return capacity
end
local balance = (tonumber(stored) or capacity) + tonumber(ARGV[1])
if balance >= capacity then
  redis.call('DEL', KEYS[1])
  return capacity
end
redis.call('SET', KEYS[1], string.format('%d', math.max(0, balance)), 'PX', ARGV[3])
return math.max(0, balance)
