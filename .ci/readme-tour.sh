#!/usr/bin/env bash
# Runs the README's tour as written: the shell blocks marked <!-- tour -->
# (and the one marked <!-- tour:server -->, which starts cairn server in the
# background with its output in cairn.log), in README order, in one shell,
# in a fresh copy of the repository. The server runs as a second instance:
# the only change to the blocks is the port, `cairn server` gets
# --port-base BASE and 127.0.0.1:9000 becomes 127.0.0.1:BASE. A block that
# fails fails the tour. Needs Go and the aws CLI (installed with pip if
# missing).
#
#   .ci/readme-tour.sh              # BASE: the first free block from 19000
#   TOUR_PORT_BASE=30000 .ci/readme-tour.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v aws >/dev/null; then
  echo "== installing the aws CLI (pip)"
  python3 -m pip install -q awscli
fi

# A base whose five ports (N, N+1 the console, N+100, N+379, N+380) nobody
# listens on.
taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=${TOUR_PORT_BASE:-}
if [ -z "$base" ]; then
  for b in 19000 21000 23000 25000 27000 29000; do
    if ! taken $b && ! taken $((b + 1)) && ! taken $((b + 100)) && ! taken $((b + 379)) && ! taken $((b + 380)); then
      base=$b
      break
    fi
  done
  [ -n "$base" ] || { echo "no free port block for the tour"; exit 1; }
fi

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" # a background job of a script ignores SIGINT
    for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# A fresh directory holding the repository's tracked files as they are
# now (committed or not): what a clone gives a new user.
git ls-files -z | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -xf - -C "$work"

# The tour script: each marked block, moved to the port block, with the
# server's PID kept and its ready line awaited after the server block.
awk -v base="$base" -v work="$work" '
  BEGIN {
    print "set -euo pipefail"
    print "shopt -s expand_aliases"
    print "cd \"" work "\""
    print "wait_ready() {"
    print "  echo $1 >\"" work "/.server.pid\""
    print "  for _ in $(seq 600); do grep -qs \"^cairn server ready \" cairn.log && return; kill -0 $1 2>/dev/null || break; sleep 0.2; done"
    print "  cat cairn.log; echo \"cairn server did not get ready\"; return 1"
    print "}"
    print "set -x"
  }
  /^<!-- tour(:server)? -->$/ { mark = $0; want = 1; next }
  want && /^```sh$/ { inblock = 1; want = 0; print ": README.md line " NR; next }
  want && !/^$/ { print "README.md line " NR ": a tour mark not followed by a sh block" > "/dev/stderr"; exit 1 }
  inblock && /^```$/ {
    inblock = 0
    if (mark ~ /server/) {
      print "{ set +x; } 2>/dev/null; wait_ready $!; set -x"
      servers++
    }
    blocks++
    next
  }
  inblock {
    line = $0
    gsub(/cairn server/, "cairn server --port-base " base, line)
    gsub(/127\.0\.0\.1:9000/, "127.0.0.1:" base, line)
    print line
  }
  END {
    if (inblock || servers != 1 || blocks < 2) {
      print "README.md: want one tour:server block and tour blocks, all closed" > "/dev/stderr"
      exit 1
    }
  }
' README.md >"$work/.tour.sh"

echo "== the README tour on ports $base, $((base + 100)), $((base + 379)), $((base + 380))"
set +e
# The aws CLI draws progress with carriage returns: drop those lines.
(bash "$work/.tour.sh"; echo $? >"$work/.tour.rc") 2>&1 | tr '\r' '\n' | grep --line-buffered -v '^Completed .* remaining'
set -e
server_pid=$(cat "$work/.server.pid" 2>/dev/null || true)
rc=$(cat "$work/.tour.rc")
if [ "$rc" != 0 ]; then
  echo "== the tour failed (exit $rc); the server's log:"
  cat "$work/cairn.log" 2>/dev/null || true
  exit 1
fi
echo "README tour passed"
