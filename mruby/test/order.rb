# order.rb: what hash order shows a script, which must not change from run
# to run (mruby/test.sh runs it under two KHL_SEED values and compares):
# the order of a large table's variables, constants and methods, and the
# name a class gets from the first of its outer module's constants that
# holds it.  Stock's order differs from khl's; neither is defined.
o = Module.new
c = Class.new
20.times { |i| o.const_set(:"K#{i}", c) }
Named = o
puts c.name

class Wide
  def initialize
    30.times { |i| instance_variable_set(:"@v#{i}", i) }
  end
  30.times { |i| define_method(:"m#{i}") { i } }
end
p Wide.new.instance_variables
p Wide.instance_methods(false)
30.times { |i| Wide.const_set(:"C#{i}", i) }
p Wide.constants
