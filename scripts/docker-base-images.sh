#!/usr/bin/env bash
# Builds the base images the docker runtime's tests run on, locally (no registry is reachable in CI):
#   berth-base/node:20   the host's Node 20 binary and the shared libraries it needs, busybox (sh, env,
#                        ls, cat, mkdir, rm, cp, mv, id, sleep, wget), CA certificates, a non-root user
#                        `app` (uid/gid 1000) it runs as, /tmp 1777, and the host's npm (npm, npx) and
#                        corepack from /usr/lib/node_modules (same paths as on a Debian/NodeSource host).
# Idempotent: an image built from the same node version and the same recipe is kept (labels berth.node
# and berth.base; bump base_rev when the recipe changes); pass --force to rebuild. Needs root (the files' owners) and a Docker Engine (DOCKER_HOST or /var/run/docker.sock).
set -euo pipefail

image=berth-base/node:20
# The recipe's revision (label berth.base): 2 added npm, npx and corepack.
base_rev=2
force=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    *) echo "usage: $0 [--force]" >&2; exit 2 ;;
  esac
done

# The engine is 20.10 (API 1.41): prefer the client that came with it over a newer one on PATH.
if [ -x /usr/bin/docker ]; then docker=/usr/bin/docker; else docker=$(command -v docker || true); fi
if [ -z "$docker" ]; then echo "docker-base-images: no docker client: install docker.io" >&2; exit 1; fi
if ! "$docker" version >/dev/null 2>&1; then
  echo "docker-base-images: the Docker Engine does not answer (${DOCKER_HOST:-/var/run/docker.sock}): start dockerd" >&2
  exit 1
fi

node_bin=$(command -v node || true)
if [ -z "$node_bin" ]; then echo "docker-base-images: no node on PATH" >&2; exit 1; fi
node_bin=$(readlink -f "$node_bin")
node_version=$("$node_bin" --version)
case "$node_version" in
  v20.*) ;;
  *) echo "docker-base-images: $image needs the host's node to be Node 20 (it is $node_version)" >&2; exit 1 ;;
esac
busybox=/bin/busybox
if [ ! -x "$busybox" ] || ! "$busybox" --list >/dev/null 2>&1; then
  echo "docker-base-images: no $busybox: install busybox-static" >&2; exit 1
fi
if ldd "$busybox" >/dev/null 2>&1; then
  echo "docker-base-images: $busybox is dynamically linked: install busybox-static" >&2; exit 1
fi
certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -f "$certs" ]; then echo "docker-base-images: no $certs: install ca-certificates" >&2; exit 1; fi
# npm and corepack as the host installed them beside node (/usr/lib/node_modules/<name>/...).
npm_cli=$(command -v npm || true)
if [ -z "$npm_cli" ]; then echo "docker-base-images: no npm on PATH: install npm" >&2; exit 1; fi
npm_cli=$(readlink -f "$npm_cli")
npm_dir=$(dirname "$(dirname "$npm_cli")")
if [ "$(basename "$npm_dir")" != npm ] || [ ! -f "$npm_dir/bin/npx-cli.js" ]; then
  echo "docker-base-images: npm at $npm_cli is not a node_modules/npm install" >&2; exit 1
fi
corepack_dir=""
corepack_cli=$(command -v corepack || true)
if [ -n "$corepack_cli" ]; then
  corepack_cli=$(readlink -f "$corepack_cli")
  corepack_dir=$(dirname "$(dirname "$corepack_cli")")
  if [ "$(basename "$corepack_dir")" != corepack ]; then corepack_dir=""; fi
fi

if [ "$force" = 0 ]; then
  have=$("$docker" image inspect --format '{{ index .Config.Labels "berth.node" }} {{ index .Config.Labels "berth.base" }}' "$image" 2>/dev/null || true)
  if [ "$have" = "$node_version $base_rev" ]; then
    echo "docker-base-images: $image is there (node $node_version)"
    exit 0
  fi
fi

root=$(mktemp -d /tmp/berth-base-node.XXXXXX)
trap 'rm -rf -- "$root"' EXIT

mkdir -p "$root"/{bin,usr/bin,usr/local/bin,etc/ssl/certs,home/app,root,tmp,data,app}
install -m 0755 "$node_bin" "$root/usr/local/bin/node"

# The shared libraries node loads (ldd: "name => /path (addr)" and the loader's "/path (addr)").
while read -r lib; do
  [ -n "$lib" ] || continue
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done < <(ldd "$node_bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')

install -m 0755 "$busybox" "$root/bin/busybox"
for applet in sh env ls cat mkdir rm cp mv id sleep wget; do
  ln -s busybox "$root/bin/$applet"
done
ln -s /bin/env "$root/usr/bin/env"

# npm (and npx) at the host's path, linked from /usr/local/bin like a Node install does; corepack too.
mkdir -p "$root$(dirname "$npm_dir")"
cp -a "$npm_dir" "$root$npm_dir"
ln -s "$npm_dir/bin/npm-cli.js" "$root/usr/local/bin/npm"
ln -s "$npm_dir/bin/npx-cli.js" "$root/usr/local/bin/npx"
if [ -n "$corepack_dir" ]; then
  mkdir -p "$root$(dirname "$corepack_dir")"
  cp -a "$corepack_dir" "$root$corepack_dir"
  ln -s "$corepack_cli" "$root/usr/local/bin/corepack"
fi

install -m 0644 "$certs" "$root/etc/ssl/certs/ca-certificates.crt"
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
app:x:1000:1000:app:/home/app:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
app:x:1000:
nogroup:x:65534:
EOF
echo 'hosts: files dns' >"$root/etc/nsswitch.conf"
chmod 1777 "$root/tmp"
chmod 0700 "$root/root"
chown 1000:1000 "$root/home/app" "$root/data" "$root/app"

tar --numeric-owner -C "$root" -cf - . | "$docker" import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'ENV HOME=/home/app' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'USER app' \
  --change 'WORKDIR /home/app' \
  --change 'CMD ["node"]' \
  --change "LABEL berth.node=$node_version" \
  --change "LABEL berth.base=$base_rev" \
  - "$image" >/dev/null
echo "docker-base-images: built $image (node $node_version, npm $("$node_bin" -p "require('$npm_dir/package.json').version"))"
