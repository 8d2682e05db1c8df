# hash_churn.rb: creates and drops huge numbers of small Hash objects (1 to
# 16 entries, integer, string and symbol keys), the pattern of option hashes,
# keyword arguments and per-record maps in real Ruby code.  Each Hash is a
# GC object plus an entry array that grows 1 -> 16 entries, so the run is a
# stream of small allocations, resizes and frees.  A ring of 64 hashes stays
# alive so the collector always has live small tables to mark around; only
# every 1024th hash goes in: storing every one into the (old) ring array
# promotes each through the write barrier, and mruby 3.1's generational GC,
# which paces itself by object count and not by the malloc'd entry arrays,
# then holds ~350 bytes per hash until a rare major GC (220 MB of RSS at the
# default size on every allocator), which would measure mruby, not malloc.
#
# KHL_SCALE (handed over as $KHL_SCALE by khl-mruby) is the number of hashes
# made; default 600000.  Prints a checksum of what was read back.

class Lcg
  def initialize(seed)
    @s = seed
  end

  def next_int(n)
    @s = (@s * 16807) % 2147483647
    @s % n
  end
end

KEYS_STR = (0...16).map { |k| "field#{k}" }
KEYS_SYM = KEYS_STR.map { |s| s.to_sym }

n = ($KHL_SCALE || 600000).to_i
rng = Lcg.new(4242)
ring = Array.new(64)
sum = 0
entries = 0
i = 0
while i < n
  size = 1 + rng.next_int(16)
  h = {}
  kind = i % 3
  k = 0
  while k < size
    if kind == 0
      h[k * 7 + (i & 3)] = k
    elsif kind == 1
      h[KEYS_STR[k]] = k
    else
      h[KEYS_SYM[k]] = k
    end
    k += 1
  end
  # Read back and delete one key so lookups and deletions are exercised.
  if kind == 0
    sum += h[(size - 1) * 7 + (i & 3)]
    h.delete(i & 3)
  elsif kind == 1
    sum += h[KEYS_STR[size - 1]]
    h.delete(KEYS_STR[0])
  else
    sum += h[KEYS_SYM[size - 1]]
    h.delete(KEYS_SYM[0])
  end
  entries += h.size
  ring[(i >> 10) & 63] = h if (i & 1023) == 0
  i += 1
end
live = 0
ring.each { |x| live += x.size if x }
puts "hash_churn hashes=#{n}"
puts "checksum sum=#{sum} entries=#{entries} live=#{live}"
