# examples/mruby/mruby.mk: builds $(BUILD)/examples/khl-mruby, the mruby 3.1
# host that runs a Ruby script on libc or on khl_pool (khl_mruby.c), and
# adds it to EXAMPLE_BINS so `make test` builds it before tests/test_interp.c
# runs it.  Included by the top-level Makefile.
KHL_MRUBY_BIN = $(BUILD)/examples/khl-mruby
EXAMPLE_BINS += $(KHL_MRUBY_BIN)

# libmruby-dev is in DEPS_TEST already; Debian's libmruby.a needs only libm.
$(KHL_MRUBY_BIN): examples/mruby/khl_mruby.c examples/host.h $(HEADERS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) -lmruby -lm
