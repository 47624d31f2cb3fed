#!/bin/bash
# The Debian package's systemd unit, from the repository's: usage: unit.sh UNIT PKGNAME.
# ExecStart runs the node bundled under /usr/lib/PKGNAME with the node flags of the
# repository's ExecStart (the daemon's memory settings), kept as they are; the script
# fails when it cannot find them, rather than ship a unit without them.
set -euo pipefail
unit=$1
pkgname=$2
flags=$(sed -n 's|^ExecStart=/usr/bin/node \(--[^/]*[^ ]\) /usr/lib/node_modules/ovn-gwmode-agent/dist/src/cli/main\.js run$|\1|p' "$unit")
if [ -z "$flags" ]; then
  echo "unit.sh: no node flags found in the ExecStart of $unit" >&2
  exit 1
fi
exec_start="ExecStart=/usr/lib/$pkgname/bin/node $flags /usr/lib/$pkgname/dist/src/cli/main.js run"
out=$(sed -e "s|^ExecStart=.*|$exec_start|" \
    -e "s|^Documentation=.*|Documentation=file:///usr/share/doc/$pkgname/README.md|" \
    -e "s|^# Install: .*|# Installed by the $pkgname Debian package; its settings: /etc/default/$pkgname.|" \
    -e '/^# \/etc\/systemd\/system\/ and the sample settings/d' \
    "$unit")
grep -qxF "$exec_start" <<<"$out"
printf '%s\n' "$out"
