#!/bin/sh
# mruby/cflags.sh FLAGS.MAK: the -I and -D flags of an mruby build (its
# libmruby.flags.mak), unquoted, for compiling a host against it.
sed -n 's/^MRUBY_CFLAGS = //p' "$1" | tr ' ' '\n' | sed -n 's/^\(-[ID]\)"\{0,1\}\([^"]*\)"\{0,1\}$/\1\2/p' | tr '\n' ' '
