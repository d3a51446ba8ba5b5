#!/usr/bin/env bash
# Builds base images for the docker runtime locally, from this host's own toolchains (no registry is
# reachable in CI or on an offline host): `scripts/docker-base-images.sh [--force] [RUNTIME...|all]`.
#   node    berth-base/node:20        the host's Node 20, npm, npx and corepack (default; the tests need it)
#   python  berth-base/python:X.Y     the host's python3 (stdlib, venv, pip), relocated to /usr/local
#   go      berth-base/go:X.Y         the host's GOROOT at /usr/local/go (CGO_ENABLED=0: no C compiler)
#   ruby    berth-base/ruby:X.Y       the host's ruby, gem and bundler at the host's paths
#   php     berth-base/php:X.Y        the host's php CLI, its extensions and ini files
#   all     every runtime above that the host has (those it lacks are named and passed over)
# and the images of managed services the docker runtime's tests run (docs/services.md), from the
# host's Debian packages, named only (not part of `all`):
#   postgres  berth-test/postgres:15    postgresql-15's server and clients (without JIT)
#   redis     berth-test/redis:7        redis-server, redis-cli, redis-check-rdb
# Every image also has: busybox (sh and the usual tools), CA certificates, a non-root user `app`
# (uid/gid 1000) it runs as, /tmp 1777, and the shared libraries native packages commonly load
# (librt, libstdc++, libgcc_s, libatomic, libgomp, libz, libssl, libcrypto, libresolv, ...), plus every
# library the toolchain's own programs and modules need (ldd). Point the runtime at an image with
# BERTH_IMAGE_<RUNTIME> (the script prints the line to set).
# Idempotent: an image built from the same toolchain version and the same recipe is kept (label
# berth.inputs; bump base_rev when the recipe changes); --force rebuilds. Needs root (the files' owners)
# and a Docker Engine (DOCKER_HOST or /var/run/docker.sock).
set -euo pipefail

# The recipe's revision: 2 added npm, npx and corepack; 3 the common native libraries and other runtimes.
base_rev=3
force=0
wanted=()
named=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    node | python | go | ruby | php | postgres | redis) wanted+=("$arg"); named+=("$arg") ;;
    all) wanted+=(node python go ruby php) ;;
    *) echo "usage: $0 [--force] [node|python|go|ruby|php|all|postgres|redis]..." >&2; exit 2 ;;
  esac
done
[ ${#wanted[@]} -gt 0 ] || { wanted=(node); named=(node); }

# The engine is 20.10 (API 1.41): prefer the client that came with it over a newer one on PATH.
if [ -x /usr/bin/docker ]; then docker=/usr/bin/docker; else docker=$(command -v docker || true); fi
if [ -z "$docker" ]; then echo "docker-base-images: no docker client: install docker.io" >&2; exit 1; fi
if ! "$docker" version >/dev/null 2>&1; then
  echo "docker-base-images: the Docker Engine does not answer (${DOCKER_HOST:-/var/run/docker.sock}): start dockerd" >&2
  exit 1
fi
busybox=/bin/busybox
if [ ! -x "$busybox" ] || ! "$busybox" --list >/dev/null 2>&1; then
  echo "docker-base-images: no $busybox: install busybox-static" >&2; exit 1
fi
if ldd "$busybox" >/dev/null 2>&1; then
  echo "docker-base-images: $busybox is dynamically linked: install busybox-static" >&2; exit 1
fi
certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -f "$certs" ]; then echo "docker-base-images: no $certs: install ca-certificates" >&2; exit 1; fi

# Libraries that prebuilt native modules (napi binaries of rollup, rolldown, esbuild-like tools, Python
# wheels, Ruby gems) link against and a slim image may lack; found through the loader's cache.
common_libs=(librt.so.1 libdl.so.2 libpthread.so.0 libm.so.6 libresolv.so.2 libutil.so.1 libanl.so.1
  libstdc++.so.6 libgcc_s.so.1 libatomic.so.1 libgomp.so.1 libz.so.1 libssl.so.3 libcrypto.so.3
  libnss_dns.so.2 libnss_files.so.2)

roots=()
cleanup() { for r in "${roots[@]}"; do rm -rf -- "$r"; done; }
trap cleanup EXIT

# The image's inputs are those already built: say so and succeed (unless --force).
is_current() { # image inputs
  [ "$force" = 0 ] || return 1
  local have
  have=$("$docker" image inspect --format '{{ index .Config.Labels "berth.inputs" }}' "$1" 2>/dev/null || true)
  if [ "$have" = "$2" ]; then echo "docker-base-images: $1 is there ($2)"; return 0; fi
  return 1
}

# Copies one host library (following links) to the same path in the image.
copy_lib() { # root path
  [ -e "$1$2" ] && return 0
  mkdir -p "$1$(dirname "$2")"
  cp -L "$2" "$1$2"
}

# Every shared library the ELF files given (host paths) load, ldd's "name => /path" and the loader.
copy_needed() { # root files...
  local root=$1 lib
  shift
  while read -r lib; do
    [ -n "$lib" ] || continue
    case "$lib" in
      /lib/* | /lib64/* | /usr/lib/* | /usr/lib64/*) copy_lib "$root" "$lib" ;;
      # A library of a private prefix (pyenv's libpython under /root): where the loader looks by default.
      *) [ -e "$root/usr/lib/$(basename "$lib")" ] || cp -L "$lib" "$root/usr/lib/$(basename "$lib")" ;;
    esac
  done < <(for f in "$@"; do ldd "$f" 2>/dev/null || true; done | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
}

# The ELF programs and modules inside a host tree (executables and *.so files).
elf_files() { # dir...
  find "$@" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -exec sh -c 'for f; do [ "$(head -c4 "$f" | od -An -c | tr -d " ")" = "177ELF" ] && echo "$f"; done; true' sh {} +
}

# A new image root with what every base image has.
new_root() { # name -> sets $root
  root=$(mktemp -d "/tmp/berth-base-$1.XXXXXX")
  roots+=("$root")
  mkdir -p "$root"/{bin,usr/bin,usr/lib,usr/local/bin,etc/ssl/certs,home/app,root,tmp,data,app}
  install -m 0755 "$busybox" "$root/bin/busybox"
  for applet in sh env ls cat mkdir rm cp mv id sleep wget tar gzip grep sed head tail tr wc sort uname chmod ln find xargs; do
    ln -s busybox "$root/bin/$applet"
  done
  ln -s /bin/env "$root/usr/bin/env"
  local soname path
  for soname in "${common_libs[@]}"; do
    # The first entry of that name (awk reads to the end: an early exit would be SIGPIPE under pipefail).
    path=$(ldconfig -p | awk -v n="$soname" '$1 == n && !found { print $NF; found = 1 }')
    if [ -n "$path" ]; then copy_needed "$root" "$path"; copy_lib "$root" "$path"; else echo "docker-base-images: note: the host has no $soname" >&2; fi
  done
  install -m 0644 "$certs" "$root/etc/ssl/certs/ca-certificates.crt"
  # Time zones (TZ, PHP's date.timezone, Python's zoneinfo).
  [ -d /usr/share/zoneinfo ] && { mkdir -p "$root/usr/share"; cp -a /usr/share/zoneinfo "$root/usr/share/"; }
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'app:x:1000:1000:app:/home/app:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'app:x:1000:' 'nogroup:x:65534:' >"$root/etc/group"
  echo 'hosts: files dns' >"$root/etc/nsswitch.conf"
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root"
  chown 1000:1000 "$root/home/app" "$root/data" "$root/app"
}

# Imports the root as the image (extra --change lines after the inputs).
import_root() { # image inputs runtime cmd changes...
  local image=$1 inputs=$2 runtime=$3 cmd=$4
  shift 4
  local changes=()
  for c in "$@"; do changes+=(--change "$c"); done
  tar --numeric-owner -C "$root" -cf - . | "$docker" import \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
    --change 'ENV HOME=/home/app' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'USER app' \
    --change 'WORKDIR /home/app' \
    --change "CMD $cmd" \
    --change "LABEL berth.base=$base_rev" \
    --change "LABEL berth.runtime=$runtime" \
    --change "LABEL berth.inputs=\"$inputs\"" \
    "${changes[@]}" \
    - "$image" >/dev/null
  echo "docker-base-images: built $image ($inputs): BERTH_IMAGE_$(echo "$runtime" | tr a-z A-Z)=$image"
}

# Node 20: the binary, npm (and npx) and corepack at the host's paths (as a Debian/NodeSource host has them).
build_node() {
  local node_bin npm_cli npm_dir corepack_cli corepack_dir="" node_version
  node_bin=$(command -v node || true)
  [ -n "$node_bin" ] || { echo "docker-base-images: no node on PATH" >&2; return 3; }
  node_bin=$(readlink -f "$node_bin")
  node_version=$("$node_bin" --version)
  case "$node_version" in
    v20.*) ;;
    *) echo "docker-base-images: berth-base/node:20 needs the host's node to be Node 20 (it is $node_version)" >&2; return 1 ;;
  esac
  npm_cli=$(command -v npm || true)
  [ -n "$npm_cli" ] || { echo "docker-base-images: no npm on PATH: install npm" >&2; return 1; }
  npm_cli=$(readlink -f "$npm_cli")
  npm_dir=$(dirname "$(dirname "$npm_cli")")
  if [ "$(basename "$npm_dir")" != npm ] || [ ! -f "$npm_dir/bin/npx-cli.js" ]; then
    echo "docker-base-images: npm at $npm_cli is not a node_modules/npm install" >&2; return 1
  fi
  corepack_cli=$(command -v corepack || true)
  if [ -n "$corepack_cli" ]; then
    corepack_cli=$(readlink -f "$corepack_cli")
    corepack_dir=$(dirname "$(dirname "$corepack_cli")")
    [ "$(basename "$corepack_dir")" = corepack ] || corepack_dir=""
  fi
  local image=berth-base/node:20 inputs="rev $base_rev node $node_version"
  is_current "$image" "$inputs" && return 0
  new_root node
  install -m 0755 "$node_bin" "$root/usr/local/bin/node"
  copy_needed "$root" "$node_bin"
  mkdir -p "$root$(dirname "$npm_dir")"
  cp -a "$npm_dir" "$root$npm_dir"
  ln -s "$npm_dir/bin/npm-cli.js" "$root/usr/local/bin/npm"
  ln -s "$npm_dir/bin/npx-cli.js" "$root/usr/local/bin/npx"
  if [ -n "$corepack_dir" ]; then
    mkdir -p "$root$(dirname "$corepack_dir")"
    cp -a "$corepack_dir" "$root$corepack_dir"
    ln -s "$corepack_cli" "$root/usr/local/bin/corepack"
  fi
  import_root "$image" "$inputs" node '["node"]' "LABEL berth.node=$node_version"
}

# Python: the interpreter and its standard library (without tests, GUI and the host's site-packages)
# at /usr/local (Python finds its prefix from where its binary is), pip, and venv's bundled wheels.
build_python() {
  command -v python3 >/dev/null 2>&1 || { echo "docker-base-images: the host has no python3" >&2; return 3; }
  local info exe stdlib ver full pipdir
  info=$(python3 -c 'import sys, sysconfig; print(sys.executable); print(sysconfig.get_paths()["stdlib"]); print("%d.%d" % sys.version_info[:2]); print(sys.version.split()[0])')
  exe=$(readlink -f "$(sed -n 1p <<<"$info")")
  stdlib=$(sed -n 2p <<<"$info")
  ver=$(sed -n 3p <<<"$info")
  full=$(sed -n 4p <<<"$info")
  pipdir=$(python3 -c 'import os, pip; print(os.path.dirname(pip.__file__))' 2>/dev/null || true)
  local image="berth-base/python:$ver" inputs="rev $base_rev python $full"
  is_current "$image" "$inputs" && return 0
  new_root python
  local lib="$root/usr/local/lib/python$ver"
  install -m 0755 "$exe" "$root/usr/local/bin/python$ver"
  ln -s "python$ver" "$root/usr/local/bin/python3"
  ln -s "python$ver" "$root/usr/local/bin/python"
  mkdir -p "$lib"
  tar -C "$stdlib" --exclude=./test --exclude=./site-packages --exclude=./dist-packages --exclude=./idlelib \
    --exclude=./tkinter --exclude=./turtledemo --exclude=__pycache__ --exclude=./EXTERNALLY-MANAGED -cf - . | tar -C "$lib" -xf -
  mkdir -p "$lib/site-packages"
  if [ -n "$pipdir" ]; then
    cp -rL "$pipdir" "$lib/site-packages/pip"
    printf '#!/bin/sh\nexec /usr/local/bin/python%s -m pip "$@"\n' "$ver" >"$root/usr/local/bin/pip"
    chmod 0755 "$root/usr/local/bin/pip"
    ln -s pip "$root/usr/local/bin/pip3"
  fi
  # Debian's ensurepip (venv) takes its wheels from here rather than from the standard library.
  [ -d /usr/share/python-wheels ] && { mkdir -p "$root/usr/share"; cp -rL /usr/share/python-wheels "$root/usr/share/"; }
  mapfile -t elves < <(elf_files "$lib")
  copy_needed "$root" "$exe" "${elves[@]}"
  import_root "$image" "$inputs" python '["python3"]' 'ENV PYTHONDONTWRITEBYTECODE=1' 'ENV PIP_DISABLE_PIP_VERSION_CHECK=1'
}

# Go: GOROOT (links followed; without its tests) at /usr/local/go; no C compiler, so cgo is off.
build_go() {
  command -v go >/dev/null 2>&1 || { echo "docker-base-images: the host has no go" >&2; return 3; }
  local goroot full ver
  goroot=$(go env GOROOT)
  full=$(go env GOVERSION)
  ver=$(sed -E 's/^go([0-9]+\.[0-9]+).*/\1/' <<<"$full")
  local image="berth-base/go:$ver" inputs="rev $base_rev go $full"
  is_current "$image" "$inputs" && return 0
  new_root go
  mkdir -p "$root/usr/local/go"
  tar -C "$goroot" -h --exclude=./test --exclude=./misc --exclude=./doc -cf - . | tar -C "$root/usr/local/go" -xf -
  ln -s /usr/local/go/bin/go "$root/usr/local/bin/go"
  ln -s /usr/local/go/bin/gofmt "$root/usr/local/bin/gofmt"
  copy_needed "$root" "$goroot/bin/go"
  import_root "$image" "$inputs" go '["go", "version"]' 'ENV CGO_ENABLED=0' 'ENV GOTOOLCHAIN=local'
}

# Ruby: its paths are compiled in, so the interpreter, libraries, gem and bundler stay at the host's paths.
build_ruby() {
  command -v ruby >/dev/null 2>&1 || { echo "docker-base-images: the host has no ruby" >&2; return 3; }
  local info exe full ver d
  info=$(ruby -e 'puts RbConfig.ruby, RUBY_VERSION, RbConfig::CONFIG.values_at("rubylibprefix", "rubyarchprefix", "vendordir", "sitedir").compact.uniq')
  exe=$(readlink -f "$(sed -n 1p <<<"$info")")
  full=$(sed -n 2p <<<"$info")
  ver=$(cut -d. -f1,2 <<<"$full")
  local image="berth-base/ruby:$ver" inputs="rev $base_rev ruby $full"
  is_current "$image" "$inputs" && return 0
  new_root ruby
  copy_lib "$root" "$exe"
  ln -sf "$exe" "$root/usr/local/bin/ruby"
  # The scripts gem writes name /usr/bin/ruby.
  [ -e "$root/usr/bin/ruby" ] || ln -s "$exe" "$root/usr/bin/ruby"
  while read -r d; do
    [ -n "$d" ] && [ -d "$d" ] || continue
    mkdir -p "$root$d"
    tar -C "$d" -h -cf - . | tar -C "$root$d" -xf -
  done < <(sed -n '3,$p' <<<"$info"; echo /usr/share/rubygems-integration)
  for p in gem bundle bundler erb irb rake; do
    d=$(command -v "$p" || true)
    [ -n "$d" ] && [ -f "$d" ] && copy_lib "$root" "$(readlink -f "$d")" && ln -sf "$(readlink -f "$d")" "$root/usr/local/bin/$p"
  done
  mapfile -t elves < <(elf_files "$root/usr/lib")
  copy_needed "$root" "$exe" "${elves[@]/#$root/}"
  # Gems install for the build's user (its HOME), not into the root-owned system folder.
  import_root "$image" "$inputs" ruby '["ruby", "--version"]' 'ENV GEM_HOME=/home/app/.gem' 'ENV BUNDLE_PATH=vendor/bundle'
}

# PHP: the CLI, its extensions and its ini files (conf.d's links into mods-available kept).
build_php() {
  command -v php >/dev/null 2>&1 || { echo "docker-base-images: the host has no php" >&2; return 3; }
  local exe full ver extdir ini
  exe=$(readlink -f "$(command -v php)")
  full=$(php -r 'echo PHP_VERSION;')
  ver=$(php -r 'echo PHP_MAJOR_VERSION . "." . PHP_MINOR_VERSION;')
  extdir=$(php -r 'echo PHP_EXTENSION_DIR;')
  ini=$(dirname "$(dirname "$(php -r 'echo php_ini_loaded_file();')")")
  local image="berth-base/php:$ver" inputs="rev $base_rev php $full"
  is_current "$image" "$inputs" && return 0
  new_root php
  copy_lib "$root" "$exe"
  ln -sf "$exe" "$root/usr/local/bin/php"
  for d in "$extdir" "$ini"; do
    [ -d "$d" ] || continue
    mkdir -p "$root$d"
    cp -a "$d/." "$root$d/"
  done
  [ -x /usr/bin/composer ] && { copy_lib "$root" /usr/bin/composer; [ -d /usr/share/php ] && { mkdir -p "$root/usr/share"; cp -a /usr/share/php "$root/usr/share/"; }; }
  mapfile -t elves < <(elf_files "$extdir")
  copy_needed "$root" "$exe" "${elves[@]}"
  import_root "$image" "$inputs" php '["php", "-a"]'
}

# PostgreSQL 15 (Debian's postgresql-15): bin, lib (without the LLVM JIT) and share at Debian's paths,
# the C.UTF-8 locale initdb uses; on PATH by name, as the official image has it.
build_postgres() {
  local pg=/usr/lib/postgresql/15 share=/usr/share/postgresql/15
  [ -x "$pg/bin/postgres" ] && [ -x "$pg/bin/initdb" ] || { echo "docker-base-images: the host has no PostgreSQL 15 (apt-get install postgresql-15)" >&2; return 3; }
  local full
  full=$("$pg/bin/postgres" --version | sed -E 's/^[^0-9]*([0-9.]+).*/\1/')
  local image=berth-test/postgres:15 inputs="rev $base_rev postgres $full"
  is_current "$image" "$inputs" && return 0
  new_root postgres
  mkdir -p "$root$pg" "$root$share" "$root/usr/lib/locale"
  tar -C "$pg" --exclude=./lib/bitcode --exclude=./lib/llvmjit.so --exclude=./lib/llvmjit_types.bc -cf - . | tar -C "$root$pg" -xf -
  cp -a "$share/." "$root$share/"
  [ -d /usr/lib/locale/C.utf8 ] && cp -a /usr/lib/locale/C.utf8 "$root/usr/lib/locale/"
  mapfile -t elves < <(elf_files "$root$pg")
  copy_needed "$root" "${elves[@]/#$root/}"
  import_root "$image" "$inputs" postgres '["postgres", "--version"]' "ENV PATH=/usr/local/bin:$pg/bin:/usr/bin:/bin" 'ENV LANG=C.UTF-8'
}

# Redis 7 (Debian's redis-server): the server (redis-check-rdb is the same program by another name) and redis-cli.
build_redis() {
  [ -x /usr/bin/redis-server ] && [ -x /usr/bin/redis-cli ] || { echo "docker-base-images: the host has no Redis (apt-get install redis-server)" >&2; return 3; }
  local full
  full=$(/usr/bin/redis-server --version | sed -E 's/.* v=([0-9.]+).*/\1/')
  local image="berth-test/redis:${full%%.*}" inputs="rev $base_rev redis $full"
  is_current "$image" "$inputs" && return 0
  new_root redis
  for p in redis-server redis-cli redis-check-rdb; do copy_lib "$root" "/usr/bin/$p"; done
  copy_needed "$root" /usr/bin/redis-server /usr/bin/redis-cli
  import_root "$image" "$inputs" redis '["redis-server", "--version"]'
}

status=0
declare -A done_
for runtime in "${wanted[@]}"; do
  [ -z "${done_[$runtime]:-}" ] || continue
  done_[$runtime]=1
  # A subshell of its own: `set -e` holds inside it (it would not in a function called from `||`).
  set +e
  (
    set -e
    trap cleanup EXIT
    "build_$runtime"
  )
  rc=$?
  set -e
  # A runtime the host lacks is passed over when asked for through `all`, an error when named.
  if [ "$rc" = 3 ] && printf '%s\n' "${named[@]}" | grep -qx "$runtime"; then status=1; elif [ "$rc" != 0 ] && [ "$rc" != 3 ]; then status=1; fi
done
exit "$status"
