#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster for the tests and removes it on exit.
#
#   scripts/pg-test-cluster.sh CMD ARGS...   run CMD with AGENTSERVER_TEST_DATABASE_URL set
#   scripts/pg-test-cluster.sh               print the URL and keep the cluster until Ctrl-C
#
# The cluster lives in a new temporary directory, listens on 127.0.0.1 only
# (a free port) and on a unix socket in that directory, and trusts local
# connections: it is for tests, never for data. On Debian the postgresql
# package is installed with apt-get when no server binaries are found (this
# needs root). PostgreSQL refuses to run as root, so as root the cluster runs
# as the postgres user.
set -euo pipefail

# find_bindir prints the directory of the newest Debian PostgreSQL server
# binaries, else that of an initdb on PATH.
find_bindir() {
	local d found
	found=$(for d in /usr/lib/postgresql/*/bin; do
		if [ -x "$d/initdb" ]; then
			echo "$d"
		fi
	done | sort -V | tail -n 1)
	if [ -z "$found" ] && command -v initdb >/dev/null; then
		found=$(dirname "$(command -v initdb)")
	fi
	echo "$found"
}

bindir=$(find_bindir)
if [ -z "$bindir" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "pg-test-cluster: no PostgreSQL server found; install the postgresql package" >&2
		exit 1
	fi
	echo "pg-test-cluster: installing postgresql" >&2
	apt-get update >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >&2
	bindir=$(find_bindir)
fi

as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# port_free succeeds when nothing accepts connections on 127.0.0.1:$1.
port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

dir=$(mktemp -d -t agentserver-pg.XXXXXX)
if [ "$(id -u)" -eq 0 ]; then
	chown postgres: "$dir"
fi
chmod 700 "$dir"

idle="" # the sleep of the interactive mode
cleanup() {
	if [ -n "$idle" ]; then
		kill "$idle" 2>/dev/null || true
	fi
	as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; exit 1; }

started=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
	port=$((20000 + RANDOM % 40000))
	port_free "$port" || continue
	# Durability is pointless for a throwaway cluster: fsync off keeps the
	# tests fast.
	if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=400 -c fsync=off -c full_page_writes=off -c synchronous_commit=off" \
		start >/dev/null; then
		started=1
		break
	fi
done
if [ -z "$started" ]; then
	echo "pg-test-cluster: the server did not start:" >&2
	cat "$dir/server.log" >&2 || true
	exit 1
fi

export AGENTSERVER_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
if [ $# -eq 0 ]; then
	echo "AGENTSERVER_TEST_DATABASE_URL=$AGENTSERVER_TEST_DATABASE_URL"
	echo "pg-test-cluster: running until Ctrl-C" >&2
	# wait (unlike a foreground sleep) returns as soon as a signal arrives.
	while :; do
		sleep 3600 &
		idle=$!
		wait "$idle" || true
	done
fi
"$@"
