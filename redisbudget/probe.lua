-- probe: check that Redis runs this budget's scripts and accepts the writes
-- a take makes to the bucket at KEYS[1], and leave the bucket as it was.
--
-- A Redis that answers PING but refuses writes (a read-only replica, one at
-- maxmemory with noeviction) fails the SET here as it fails a take's. A
-- stored bucket is written back unchanged, its TTL kept; a missing one is
-- written and deleted at once. Returns the status OK, which tells its reply
-- from a take's (an array) and a refund's (an integer).
local stored = redis.call('GET', KEYS[1])
if stored then
  redis.call('SET', KEYS[1], stored, 'KEEPTTL')
else
  redis.call('SET', KEYS[1], '', 'PX', 1)
  redis.call('DEL', KEYS[1])
end
return redis.status_reply('OK')
