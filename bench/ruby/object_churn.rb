# object_churn.rb: a live set of 2,000 objects replaced at random, the
# pattern of an interpreter's working set (records, AST nodes, cache
# entries): each object has a few instance variables, a small array and a
# small string, and each replacement frees an old one.  The live array's
# buffer (2,000 values, about 16 KB) is what issue 21 found mapped and
# unmapped per call on khl_pool when blocks above max_small came from the
# system; here it is rebuilt every 8,192 replacements by a collect, so that
# a buffer of that size is allocated and freed again and again.
#
# KHL_SCALE (handed over as $KHL_SCALE by khl-mruby) is the number of
# replacements; default 250000.  Prints a checksum of what was read back.

# Park and Miller's generator, as the other scripts draw, in a global so
# that drawing allocates nothing.
$seed = 2121
def draw(n)
  $seed = ($seed * 16807) % 2147483647
  $seed % n
end

class Item
  attr_reader :id, :tags, :name

  def initialize(id)
    @id = id
    @weight = draw(1000)
    @tags = Array.new(1 + draw(6)) { |k| id + k }
    @name = "item-#{id}"
    @next = nil
  end

  def link(other)
    @next = other
  end

  def score
    @weight + @tags.size + @name.size
  end
end

LIVE = 2000
n = ($KHL_SCALE || 250000).to_i
live = Array.new(LIVE) { |i| Item.new(i) }
sum = 0
i = 0
while i < n
  slot = draw(LIVE)
  old = live[slot]
  sum += old.score
  item = Item.new(LIVE + i)
  item.link(live[draw(LIVE)]) if (i & 3) == 0
  item.tags << old.id if (i & 7) == 0
  live[slot] = item
  live = live.collect { |x| x } if (i & 8191) == 8191
  i += 1
end
tags = 0
live.each { |x| tags += x.tags.size }
puts "object_churn replacements=#{n}"
puts "checksum sum=#{sum} tags=#{tags}"
