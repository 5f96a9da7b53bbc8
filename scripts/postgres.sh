#!/usr/bin/env bash
# A throw-away PostgreSQL server for the tests, on 127.0.0.1.
#   eval "$(scripts/postgres.sh start)"   # prints: export SHOOTOUT_TEST_POSTGRES_URL=...
#   scripts/postgres.sh stop
set -euo pipefail
PORT=${SHOOTOUT_TEST_PG_PORT:-55432}
DIR=${SHOOTOUT_TEST_PG_DIR:-/tmp/shootout-test-pg-$PORT}
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
# PostgreSQL refuses to run as root: run it as the postgres user then.
as_owner() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "${1:-}" in
  start)
    if ! as_owner "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; then
      rm -rf "$DIR"; mkdir -p "$DIR"
      [ "$(id -u)" -eq 0 ] && chown postgres "$DIR"
      as_owner "$BIN/initdb" -D "$DIR" -A trust -U shootout >/dev/null
      as_owner "$BIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w \
        -o "-p $PORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
    fi
    echo "export SHOOTOUT_TEST_POSTGRES_URL=postgresql+psycopg://shootout@127.0.0.1:$PORT/postgres"
    ;;
  stop)
    as_owner "$BIN/pg_ctl" -D "$DIR" -m fast stop >/dev/null 2>&1 || true
    ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
