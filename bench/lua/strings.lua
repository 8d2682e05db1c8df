-- strings.lua: string-heavy work, the Lua counterpart of
-- bench/ruby/strings.rb: formatting, concatenation, splitting with gmatch and
-- a table keyed by strings (interning and hashing).  Short strings are
-- interned, longer ones (the lines, over 40 bytes) are separate objects, and
-- table.concat buffers grow through luaL_Buffer reallocations.
--
-- KHL_SCALE is the number of records built; default 400000.  Prints a
-- checksum of counts and lengths.

local n = tonumber(os.getenv("KHL_SCALE") or "400000") // 1
local counts, tags = {}, {}
local total_len, fields = 0, 0
local buf = {}
for i = 0, n - 1 do
  local key = string.format("user%d:%d", i % 997, i & 15)
  local line = "id=" .. i .. ",name=" .. key .. ",tag=t" .. (i % 31) .. ",pad=................"
  local parts = {}
  for p in line:gmatch("[^,]+") do parts[#parts + 1] = p end
  fields = fields + #parts
  local name = parts[2]:match("=(.*)")
  counts[name] = (counts[name] or 0) + 1
  tags["s_" .. parts[3]] = true
  total_len = total_len + #line + #name
  buf[#buf + 1] = line
  -- Joined and dropped every 200 records: one big string, then garbage.
  if i % 200 == 199 then
    total_len = total_len + #table.concat(buf, ";")
    buf = {}
  end
end
local keys, max, ntags = 0, 0, 0
for _, c in pairs(counts) do
  keys = keys + 1
  if c > max then max = c end
end
for _ in pairs(tags) do ntags = ntags + 1 end
print(string.format("strings records=%d", n))
print(string.format("checksum keys=%d syms=%d fields=%d len=%d max=%d", keys, ntags, fields, total_len, max))
