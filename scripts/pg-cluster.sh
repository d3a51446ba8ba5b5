#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on 127.0.0.1 and a free port, owned by the postgres user.
# Usage: eval "$(scripts/pg-cluster.sh start)"   -> exports DATABASE_URL and BERTH_PG_DIR
#        eval "$(scripts/pg-cluster.sh start --durable)"
#        scripts/pg-cluster.sh stop "$BERTH_PG_DIR"
# Plain `start` is the fast cluster tests use: fsync, synchronous_commit and full_page_writes off, so a
# crash of the machine can lose or corrupt it (fine for throwaway test data). `start --durable` keeps
# PostgreSQL's default durability (all three on), as users run it: the benches measure that one.
set -euo pipefail
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

ensure_installed() {
  if [ ! -x "$PGBIN/initdb" ]; then
    echo "PostgreSQL binaries not found in $PGBIN; installing postgresql-15" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq postgresql-15 >&2
  fi
  id postgres >/dev/null 2>&1 || useradd --system --home /var/lib/postgresql postgres
}

as_pg() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
  start)
    durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    case "${2:-}" in
      "") ;;
      --durable) durability="" ;;
      *) echo "usage: $0 start [--durable]" >&2; exit 2 ;;
    esac
    ensure_installed
    dir=$(mktemp -d /tmp/berth-pg-XXXXXX)
    chown postgres "$dir" 2>/dev/null || true
    port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
    as_pg "$PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1
    as_pg "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $port -k $dir $durability -c max_connections=300" start >&2
    echo "export DATABASE_URL=postgres://postgres@127.0.0.1:$port/postgres"
    echo "export BERTH_PG_DIR=$dir"
    ;;
  stop)
    dir=${2:?data dir}
    as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start [--durable] | stop DIR" >&2
    exit 2
    ;;
esac
