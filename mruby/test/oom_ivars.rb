# oom_ivars.rb (run by khl-mrb-probe): fills objects' iv tables under a
# tightening memory limit, so that growing a table fails at every point a
# growth can fail, and checks after each NoMemoryError that the table is
# exactly as before the failed set: every earlier variable present with its
# value, the failed one absent, and the object still usable.  The symbols
# and objects are made before the limit, and the values are Integers, so
# the only thing that allocates under the limit is the table itself.
# Prints "oom_ivars: ok N" (N = NoMemoryErrors seen) or the first mismatch.

SYMS = (0...64).map { |i| :"@v#{i}" }
failures = 0
bad = nil
objs = (0...48).map { Object.new }
objs.each_with_index do |o, budget|
  n = 0
  failed = false
  khl_limit(budget * 24)
  begin
    SYMS.each do |s|
      o.instance_variable_set(s, n)
      n += 1
    end
  rescue NoMemoryError
    failed = true
  end
  khl_limit(nil)
  failures += 1 if failed
  got = o.instance_variables.size
  bad ||= "budget #{budget}: #{got} variables, #{n} set" if got != n
  n.times do |i|
    bad ||= "budget #{budget}: @v#{i} lost" if o.instance_variable_get(SYMS[i]) != i
  end
  bad ||= "budget #{budget}: failed set stored" if failed && o.instance_variable_defined?(SYMS[n])
  # Still usable: the failed set succeeds now.
  o.instance_variable_set(SYMS[n], n) if n < SYMS.size
  bad ||= "budget #{budget}: unusable after failure" if n < SYMS.size && o.instance_variable_get(SYMS[n]) != n
end
puts bad ? "oom_ivars: FAIL #{bad}" : "oom_ivars: ok #{failures}"
