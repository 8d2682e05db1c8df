#!/bin/sh
# mk/valgrind-logs.sh DIR: the verdict of `make check-valgrind` on the logs
# valgrind wrote to DIR, one per process (--log-file=DIR/%p.log).  Criterion
# runs each test in a child process whose exit status never reaches the
# runner, so valgrind's --error-exitcode cannot fail the target on an error
# in a test; the logs can.  Fails, printing each offending log, where a log
# counts an error (ERROR SUMMARY above 0, leaks of the kinds
# --errors-for-leak-kinds names included) or loses bytes definitely, or has
# no ERROR SUMMARY but more than valgrind's preamble (its process died before
# valgrind could count).  A log of the preamble alone is a process that
# became an untraced program (popen and system run /bin/sh, which
# --trace-children-skip leaves alone).
set -eu
dir=${1:?usage: valgrind-logs.sh DIR}
logs=0
execd=0
bad=0
for f in "$dir"/*.log; do
    [ -e "$f" ] || { echo "check-valgrind: no valgrind log in $dir" >&2; exit 1; }
    logs=$((logs + 1))
    if grep -Eq 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]' "$f"; then
        :
    elif grep -q 'ERROR SUMMARY:' "$f"; then
        continue
    elif ! grep -Evq '^==[0-9]+== ($|Memcheck, |Copyright |Using Valgrind|Command: |Parent PID: )' "$f"; then
        execd=$((execd + 1))
        continue
    fi
    echo "check-valgrind: $f:" >&2
    cat "$f" >&2
    bad=$((bad + 1))
done
if [ "$bad" -gt 0 ]; then
    echo "check-valgrind: valgrind found errors in $bad of $logs processes (logs above, all in $dir)" >&2
    exit 1
fi
echo "check-valgrind: no error in any of $logs processes ($execd of them ran /bin/sh untraced; logs in $dir)"
