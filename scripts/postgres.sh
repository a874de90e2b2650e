#!/usr/bin/env bash
# A throwaway PostgreSQL server for the ledger's tests (tests/engine/test_budget*.py).
#
#   scripts/postgres.sh [start]   start it (or reuse the running one); print its URL
#   scripts/postgres.sh url       print the URL of the running server, or exit 1
#   scripts/postgres.sh stop      stop it (the cluster stays on disk for the next start)
#
# `start` installs Debian's `postgresql` package if no server binaries are found (apt-get,
# through sudo when not root; --no-install forbids it), initialises a cluster of its own with
# initdb in $DPW_POSTGRES_DIR (default: a directory in /tmp named after this checkout), starts
# it on a free loopback port with a random password, creates the database `dpwidgets` and
# writes the URL to .cache/postgres.url (mode 600). As root, the cluster belongs to the
# `postgres` system user: initdb and pg_ctl refuse to run as root.
#
# The cluster is for tests only: fsync is off (a power cut may lose it; the ledger's own
# guarantees are checked against killed clients, not a killed machine).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
url_file="$repo/.cache/postgres.url"
checkout_id=$(printf %s "$repo" | cksum | cut -d' ' -f1)
base="${DPW_POSTGRES_DIR:-${TMPDIR:-/tmp}/dpwidgets-postgres-$(id -u)-$checkout_id}"
data="$base/data"
user=dpwidgets
database=dpwidgets

say() { echo "postgres.sh: $*" >&2; }

command_name=start
install=yes
for arg in "$@"; do
  case "$arg" in
    start|stop|url) command_name=$arg ;;
    --no-install) install=no ;;
    *) say "unknown argument $arg (expected start, stop, url or --no-install)"; exit 2 ;;
  esac
done

# The newest server installed by Debian's packages, else whatever initdb is on PATH.
find_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then
    echo "$dir"
  elif command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
  fi
}

# initdb, pg_ctl and the server itself must not run as root.
owner_run() {
  if [ "$(id -u)" = 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

server_running() {
  [ -f "$data/PG_VERSION" ] && owner_run "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1
}

# The URL file holds the port and password of the last start.
url_answers() {
  [ -s "$url_file" ] && "$bin/psql" "$(cat "$url_file")" -tAc 'SELECT 1' >/dev/null 2>&1
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bin=$(find_bin)
if [ -z "$bin" ]; then
  if [ "$command_name" != start ] || [ "$install" = no ]; then
    say "no PostgreSQL server binaries (initdb, pg_ctl) found"
    exit 1
  fi
  command -v apt-get >/dev/null 2>&1 || {
    say "no PostgreSQL and no apt-get: install PostgreSQL, or set DPW_POSTGRES_URL"
    exit 1
  }
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  say "installing Debian's postgresql package"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
  bin=$(find_bin)
  [ -n "$bin" ] || { say "postgresql installed, but no initdb under /usr/lib/postgresql"; exit 1; }
fi

case "$command_name" in
  url)
    if server_running && url_answers; then cat "$url_file"; echo; exit 0; fi
    exit 1
    ;;
  stop)
    if server_running; then
      owner_run "$bin/pg_ctl" stop -D "$data" -m fast -w >/dev/null
      say "stopped the server in $data"
    fi
    rm -f "$url_file"
    exit 0
    ;;
esac

if server_running && url_answers; then
  cat "$url_file"; echo
  exit 0
fi

if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  say "running as root, and there is no 'postgres' user to own the cluster (initdb refuses root)"
  exit 1
fi

if [ ! -f "$data/PG_VERSION" ]; then
  rm -rf "$base"
  mkdir -p "$base"
  chmod 700 "$base"
  [ "$(id -u)" = 0 ] && chown postgres: "$base"
  password=$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')
  (umask 077; printf '%s\n' "$password" > "$base/password")
  [ "$(id -u)" = 0 ] && chown postgres: "$base/password"
  owner_run "$bin/initdb" -D "$data" -U "$user" --pwfile="$base/password" \
    --auth=scram-sha-256 --encoding=UTF8 --no-locale >"$base/initdb.log" 2>&1 || {
    cat "$base/initdb.log" >&2; exit 1; }
  {
    echo "listen_addresses = '127.0.0.1'"
    echo "unix_socket_directories = '$base'"
    echo "fsync = off"
    echo "full_page_writes = off"
    echo "max_connections = 200"
  } | owner_run tee -a "$data/postgresql.conf" >/dev/null
fi
password=$(cat "$base/password")

if server_running; then
  # Running, but the URL file is gone or stale: stop it and start it again on a known port.
  owner_run "$bin/pg_ctl" stop -D "$data" -m fast -w >/dev/null
fi
port=$(free_port)
owner_run "$bin/pg_ctl" start -D "$data" -l "$base/server.log" -w -t 60 -o "-p $port" >/dev/null || {
  tail -n 20 "$base/server.log" >&2; exit 1; }

export PGPASSWORD="$password"
exists=$("$bin/psql" -h 127.0.0.1 -p "$port" -U "$user" -d postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = '$database'")
[ "$exists" = 1 ] || "$bin/createdb" -h 127.0.0.1 -p "$port" -U "$user" "$database"

mkdir -p "$(dirname "$url_file")"
(umask 077; printf 'postgresql://%s:%s@127.0.0.1:%s/%s' "$user" "$password" "$port" "$database" \
  > "$url_file")
say "PostgreSQL $(basename "$(dirname "$bin")") on 127.0.0.1:$port (data in $data); URL in $url_file"
cat "$url_file"; echo
