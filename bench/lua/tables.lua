-- tables.lua: creates and drops huge numbers of small tables (1 to 16
-- entries, integer, string and mixed keys), the Lua counterpart of
-- bench/ruby/hash_churn.rb.  Non-sequential integer keys and string keys go
-- to the hash part, which Lua reallocates at 1, 2, 4, 8, 16 slots as a table
-- fills: a stream of small allocations, resizes and frees.  A ring of 64
-- tables (every 1024th made) stays alive so the collector has live tables.
--
-- KHL_SCALE is the number of tables made; default 1500000.  Prints a
-- checksum of what was read back.

local seed = 4242
local function next_int(n)
  seed = (seed * 16807) % 2147483647
  return seed % n
end

local KEYS = {}
for k = 0, 15 do KEYS[k] = "field" .. k end

local n = tonumber(os.getenv("KHL_SCALE") or "1500000") // 1
local ring = {}
local sum, entries = 0, 0
for i = 0, n - 1 do
  local size = 1 + next_int(16)
  local t = {}
  local kind = i % 3
  if kind == 0 then
    for k = 0, size - 1 do t[k * 7 + (i & 3)] = k end
    sum = sum + t[(size - 1) * 7 + (i & 3)]
    t[i & 3] = nil
  elseif kind == 1 then
    for k = 0, size - 1 do t[KEYS[k]] = k end
    sum = sum + t[KEYS[size - 1]]
    t[KEYS[0]] = nil
  else
    -- Mixed: an array part and a hash part.
    for k = 1, size do t[k] = k end
    t.name = KEYS[size - 1]
    sum = sum + #t
  end
  local c = 0
  for _ in pairs(t) do c = c + 1 end
  entries = entries + c
  if i & 1023 == 0 then ring[((i >> 10) & 63) + 1] = t end
end
local live = 0
for _, t in pairs(ring) do for _ in pairs(t) do live = live + 1 end end
print(string.format("tables tables=%d", n))
print(string.format("checksum sum=%d entries=%d live=%d", sum, entries, live))
