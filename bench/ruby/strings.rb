# strings.rb: string- and symbol-heavy work: interpolation, concatenation,
# to_sym, splitting and a Hash keyed by strings (so strings are hashed and
# compared).  Every step makes short strings and arrays that die at once,
# and the buffers of the growing strings are reallocated in steps: the
# realloc path of the allocator hook matters here.
#
# KHL_SCALE (handed over as $KHL_SCALE by khl-mruby) is the number of
# records built; default 250000.  Prints a checksum of counts and lengths.

n = ($KHL_SCALE || 250000).to_i
counts = {}
syms = {}
total_len = 0
fields = 0
buf = ""
i = 0
while i < n
  key = "user#{i % 997}:#{i & 15}"
  line = "id=" + i.to_s + ",name=" + key + ",tag=t#{i % 31}"
  parts = line.split(",")
  fields += parts.size
  name = parts[1].split("=")[1]
  counts[name] = (counts[name] || 0) + 1
  sym = ("s_" + parts[2]).to_sym
  syms[sym] = true
  total_len += line.size + name.size
  # A buffer grown by appends and dropped every 200 records: strings that
  # are reallocated through several size classes.
  buf << line << ";"
  if i % 200 == 199
    total_len += buf.size
    buf = ""
  end
  i += 1
end
max = 0
counts.each_value { |c| max = c if c > max }
puts "strings records=#{n}"
puts "checksum keys=#{counts.size} syms=#{syms.size} fields=#{fields} len=#{total_len} max=#{max}"
