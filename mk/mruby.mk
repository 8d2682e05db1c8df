# mk/mruby.mk: mruby 3.1 built from Debian's source package, stock and with
# khashlite inside (mruby/README.md).  Included by the top-level Makefile.
#   make mruby        fetch the source (apt-get source, cached), build
#                     $(MRUBY_DIR)/stock and $(MRUBY_DIR)/khl with rake -j2,
#                     and the hosts that run scripts on them
#   make mruby-test   mruby's own `rake test` on both (same counts), our
#                     scripts with identical output on stock, khl and khl on
#                     khl_pool, the out-of-memory tests, and khl under
#                     ASan+UBSan (mruby/test.sh)
MRUBY_DIR   = $(BUILD)/mruby
MRUBY_SRC   = $(MRUBY_DIR)/src
DEPS_MRUBY  = dpkg-dev ruby rake bison libxxhash-dev
MRUBY_PATCHES = $(wildcard mruby/patches/*.patch)
MRUBY_HOSTS = $(MRUBY_DIR)/host-stock $(MRUBY_DIR)/host-khl $(MRUBY_DIR)/probe-stock $(MRUBY_DIR)/probe-khl

.PHONY: mruby mruby-test mruby-hosts

$(MRUBY_SRC)/Rakefile:
	sh mruby/fetch.sh $(MRUBY_SRC)

# rake decides what is stale inside each build; make only orders the steps.
$(MRUBY_DIR)/%/build/host/lib/libmruby.a: $(MRUBY_SRC)/Rakefile $(MRUBY_PATCHES) mruby/build_config.rb $(LIB) FORCE
	sh mruby/build.sh $* $(MRUBY_SRC) $(MRUBY_DIR)/$* all

# Not intermediate files: make would delete them after linking the hosts.
.PRECIOUS: $(MRUBY_DIR)/%/build/host/lib/libmruby.a

# The hosts compile with the -I/-D flags of the mruby they link: the
# defines change mrb_state's layout.
MRUBY_HOST_CC = $(CC) $(KHL_CFLAGS) $$(sh mruby/cflags.sh $(MRUBY_DIR)/$*/build/host/lib/libmruby.flags.mak)

$(MRUBY_DIR)/host-%: examples/mruby/khl_mruby.c examples/host.h $(MRUBY_DIR)/%/build/host/lib/libmruby.a $(HEADERS) $(LIB)
	$(MRUBY_HOST_CC) $(LDFLAGS) -o $@ $< $(MRUBY_DIR)/$*/build/host/lib/libmruby.a $(LIB) -lm

$(MRUBY_DIR)/probe-%: mruby/probe.c $(MRUBY_DIR)/%/build/host/lib/libmruby.a $(HEADERS) $(LIB)
	$(MRUBY_HOST_CC) $(LDFLAGS) -o $@ $< $(MRUBY_DIR)/$*/build/host/lib/libmruby.a $(LIB) -lm

# The packages first (the library's among them), then everything else.
mruby:
	$(call deps_then,$(DEPS_MRUBY) $(DEPS_LIB),mruby-hosts)
mruby-hosts: $(MRUBY_HOSTS)

mruby-test: mruby
	@sh mk/deps.sh $(DEPS_CHECK)
	BUILD=$(BUILD) sh mruby/test.sh

.PHONY: FORCE
FORCE:
