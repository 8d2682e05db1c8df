# per_object.rb (run by khl-mrb-probe): what an object with K instance
# variables costs the allocator, K = 0, 1, 3, 4, 8.  Makes N objects of each
# kind and keeps them alive; allocating calls and live bytes are read through
# the probe's allocf before and after, and the figures for K = 0 (GC heap
# pages, the array slots) are subtracted, so what remains is the iv table.
# Objects come from GC heap pages of 1024 slots: N is a multiple of that and
# a first K = 0 round uses up the slots left free at startup, so that every
# measured round takes exactly N / 1024 new pages.
# Prints "per_object K allocs_per_object bytes_per_object" per K.
N = 8192
classes = {}
[0, 1, 3, 4, 8].each do |k|
  body = (0...k).map { |i| "@a#{i} = #{i}" }.join("; ")
  classes[k] = eval("Class.new { def initialize; #{body}; end }")
end
classes.each_value { |c| c.new }   # method caches, symbols
GC.disable
keep = Array.new(N)
results = {}
[[0, classes[0]]].concat(classes.to_a).each do |k, c|
  s0 = khl_alloc_stats
  i = 0
  while i < N
    keep[i] = c.new
    i += 1
  end
  s1 = khl_alloc_stats
  results[k] = [s1[0] - s0[0], s1[2] - s0[2]]
  keep = Array.new(N)   # the previous objects die: GC is off, so they stay allocated
end
base = results[0]
results.each do |k, r|
  next if k == 0
  calls = (r[0] - base[0]).to_f / N
  bytes = (r[1] - base[1]).to_f / N
  puts "per_object #{k} #{calls.round(2)} #{bytes.round(1)}"
end
GC.enable
