#!/bin/sh
# huge_pages.sh - mpx starts again with glibc.malloc.hugetlb=1 in
# GLIBC_TUNABLES (numerics/formats/value.c says why), under its own name,
# and leaves a tunable the environment already sets alone, and a process
# whose file is another program's (mpx run by a tool) as it is. (With other
# tunables beside it, glibc 2.36 rewrites the variable in place as it
# parses it, so /proc shows a shortened string: not checked here.) Read from
# /proc/PID/environ of an mpx that waits at its input (a fifo), so each
# check waits for a condition, not a time.
# usage: huge_pages.sh MPX
set -eu
MPX=$1
LOADER=
[ -r /proc/self/environ ] || { echo "SKIP: no /proc"; exit 0; }
ldd "$MPX" 2>/dev/null | grep -q libc.so.6 || { echo "SKIP: not glibc"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# one mpx with the environment given; prints its GLIBC_TUNABLES and comm
probe() {
  mkfifo "$tmp/in"
  env "$@" $LOADER "$MPX" -q < "$tmp/in" > "$tmp/out" 2>&1 &
  pid=$!
  exec 3> "$tmp/in" # mpx reads its commands from here; it waits until we close it
  # its environment once it waits for a command on the fifo (after any
  # start again: only the program's second start reads its input)
  n=0
  until case $(cat /proc/$pid/wchan 2>/dev/null) in *pipe_read*) true ;; *) false ;; esac; do
    n=$((n + 1)); [ $n -lt 20000 ] || fail "mpx did not start"
    kill -0 $pid 2>/dev/null || fail "mpx ended: $(cat "$tmp/out")"
    sleep 0.01
  done
  tun=$(tr '\0' '\n' < /proc/$pid/environ | sed -n 's/^GLIBC_TUNABLES=//p')
  comm=$(cat /proc/$pid/comm)
  exec 3>&-
  wait $pid || fail "mpx failed: $(cat "$tmp/out")"
  rm -f "$tmp/in"
  echo "$tun|$comm"
}

got=$(probe X=1)
[ "$got" = "glibc.malloc.hugetlb=1|mpx" ] || fail "plain start: GLIBC_TUNABLES|comm is '$got'"
got=$(probe GLIBC_TUNABLES=glibc.malloc.hugetlb=0)
[ "$got" = "glibc.malloc.hugetlb=0|mpx" ] || fail "hugetlb=0 set by the user: '$got'"
# run by another program (here the dynamic loader called by hand, as valgrind
# or an emulator would run it): the process's file is not mpx, so no new start
ldso=$(readelf -l "$MPX" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
if [ -n "$ldso" ] && [ -x "$ldso" ]; then
  LOADER=$ldso
  got=$(probe X=1)
  case $got in "|"*) ;; *) fail "run by $ldso: GLIBC_TUNABLES|comm is '$got'" ;; esac
  LOADER=
fi
echo "huge pages tunable: ok"
