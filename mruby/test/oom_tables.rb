# oom_tables.rb (run by khl-mrb-probe): fills tables under a tightening
# memory limit, so that creating or growing a table fails at every point it
# can fail, and checks after each NoMemoryError that the table is exactly as
# before the failed store: every earlier entry present, the failed one and
# the later ones absent, and the owner still usable.  Two tables: an
# object's instance variables (Integer values) and a class's methods
# (aliases of the C method Kernel#hash).  Symbols, objects and classes are
# made before the limit, so under it only the table allocates.
# Prints "oom_tables: ok I M" (the NoMemoryErrors seen on each) or the
# first mismatch.

KEYS = 64

# store.call(owner, i) adds entry i; stored.call(owner, i) says whether
# entry i is there, with its value.  Returns the failures seen, or a String.
def exercise(label, owners, bytes_per_budget, store, stored)
  failures = 0
  owners.each_with_index do |o, budget|
    n = 0
    failed = false
    khl_limit(budget * bytes_per_budget)
    begin
      KEYS.times do |i|
        store.call(o, i)
        n += 1
      end
    rescue NoMemoryError
      failed = true
    end
    khl_limit(nil)
    failures += 1 if failed
    KEYS.times do |i|
      next if stored.call(o, i) == (i < n)
      return "#{label}, budget #{budget}: entry #{i} #{i < n ? 'lost' : 'stored after the failure'}"
    end
    next if n == KEYS
    store.call(o, n)
    return "#{label}, budget #{budget}: unusable after the failure" unless stored.call(o, n)
  end
  failures
end

IVARS = (0...KEYS).map { |i| :"@v#{i}" }
NAMES = (0...KEYS).map { |i| :"m#{i}" }
ivars = exercise("ivars", (0...48).map { Object.new }, 24,
                 ->(o, i) { o.instance_variable_set(IVARS[i], i) },
                 ->(o, i) { o.instance_variable_defined?(IVARS[i]) && o.instance_variable_get(IVARS[i]) == i })
methods = exercise("methods", (0...48).map { Class.new }, 16,
                   ->(c, i) { c.alias_method(NAMES[i], :hash) },
                   ->(c, i) { c.method_defined?(NAMES[i]) && (x = c.new).__send__(NAMES[i]) == x.hash })
bad = [ivars, methods].find { |r| r.is_a?(String) }
puts bad ? "oom_tables: FAIL #{bad}" : "oom_tables: ok #{ivars} #{methods}"
