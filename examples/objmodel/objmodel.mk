# examples/objmodel/objmodel.mk: the object model demo (included by the
# top-level Makefile).  The model itself is header-only.
OBJMODEL_HEADERS = $(wildcard examples/objmodel/*.h)

$(BUILD)/examples/objmodel-demo: examples/objmodel/demo.c $(OBJMODEL_HEADERS) $(SPLIT_HEADER) $(HEADERS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) $(LDFLAGS) -o $@ examples/objmodel/demo.c $(LIB)

EXAMPLE_BINS += $(BUILD)/examples/objmodel-demo
