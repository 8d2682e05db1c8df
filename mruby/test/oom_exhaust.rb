# oom_exhaust.rb (run by khl-mrb-probe --limit=BYTES): allocates objects
# with instance variables, strings and hashes, all kept alive, until memory
# runs out.  The NoMemoryError is not rescued: the probe checks that the
# script ends in it, that nothing crashed, and that every byte is returned
# to the pool by mrb_close.
class Rec
  def initialize(i)
    @i = i
    @name = "rec#{i}"
    @tags = { :a => i, :b => [i] }
    @more = i * 2 if i % 2 == 1
  end
end
keep = []
i = 0
while true
  keep << Rec.new(i)
  i += 1
end
