#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Symbolization cost on large binaries: MariaDB under sysbench load and a
# busy node, in the same run, for two stackdump binaries (BEFORE, the one
# to compare against, and STACKDUMP): a profile of each (its distinct
# stacks, the time spent symbolizing them, the rate it kept, its CPU), then
# one-shot dumps of each (symbolize time per distinct address), and
# eu-addr2line and addr2line on the same mariadbd addresses.
#
# Needs: mariadb-server, sysbench, nodejs (Debian packages, for this bench
# only), elfutils (eu-addr2line), binutils (addr2line), python3, setsid,
# /usr/bin/time.
#   apt-get install -y mariadb-server sysbench nodejs elfutils binutils time
# Env: STACKDUMP (default build/stackdump), BEFORE (required: the binary to
# compare with, e.g. one built from an older commit), BENCH_BUILD_DIR.
# Usage: bench/symbolize.sh [SECONDS]   (profile length, default 10)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SECS=${1:-10}
BEFORE=${BEFORE:?set BEFORE=/path/to/the/stackdump/to/compare/with}
bench_require python3 time setsid mariadbd mariadb-install-db mariadb-admin mariadb sysbench node \
	eu-addr2line addr2line
bench_traps
OUT=$BUILD_DIR/symbolize
rm -rf "$OUT"
mkdir -p "$OUT"
DB=$OUT/mariadb
SOCK=$OUT/mysqld.sock

# --- MariaDB under sysbench load -------------------------------------------
bench_log "mariadb: installing a scratch data directory in $DB"
mariadb-install-db --no-defaults --datadir="$DB" --user=root >"$OUT/install.log" 2>&1 ||
	bench_die "mariadb-install-db failed (see $OUT/install.log)"
bench_spawn "$OUT/mariadbd.out" "$OUT/mariadbd.err" mariadbd --no-defaults --datadir="$DB" \
	--socket="$SOCK" --skip-networking --user=root --pid-file="$OUT/mariadbd.pid" \
	--innodb-buffer-pool-size=256M
MYSQLD=$BENCH_LAST_PID
for ((i = 0; i < 600; i++)); do
	mariadb-admin --no-defaults --socket="$SOCK" -uroot ping >/dev/null 2>&1 && break
	kill -0 "$MYSQLD" 2>/dev/null || bench_die "mariadbd exited (see $OUT/mariadbd.err)"
	sleep 0.1
done
mariadb --no-defaults --socket="$SOCK" -uroot -e 'create database sbtest'
SB=(sysbench oltp_read_write --db-driver=mysql --mysql-socket="$SOCK" --mysql-user=root
	--tables=4 --table-size=20000)
bench_log "sysbench: preparing"
"${SB[@]}" prepare >"$OUT/sysbench-prepare.log" 2>&1 || bench_die "sysbench prepare failed"
LOADSECS=$((4 * SECS + 60))
bench_spawn "$OUT/sysbench.out" "$OUT/sysbench.err" "${SB[@]}" --threads=4 --time="$LOADSECS" run
sleep 2

# --- a busy node -------------------------------------------------------------
cat >"$OUT/busy.js" <<'EOF'
// Keeps node's JIT and its interpreter busy: parse, build, sort, hash.
const crypto = require('crypto');
function work(n) {
	const a = [];
	for (let i = 0; i < n; i++)
		a.push({k: crypto.createHash('sha256').update(String(i * 7919)).digest('hex'), v: i});
	a.sort((x, y) => (x.k < y.k ? -1 : 1));
	return JSON.parse(JSON.stringify(a)).length;
}
console.log('ready ' + process.pid);
(function loop() { work(2000); setImmediate(loop); })();
EOF
bench_start_target "$OUT/node.out" node "$OUT/busy.js"
NODE=$TARGET_PID

# --- profiles: BEFORE then STACKDUMP on the same load ------------------------
# row: target tool distinct_stacks symbolize_ms samples hz cpu_s
printf 'target\ttool\tstacks\tsymbolize_ms\tsamples\thz\tcpu_s\n' >"$OUT/profile.tsv"
profile_row() {
	local name=$1 tool=$2 bin=$3 pid=$4 log
	log=$OUT/profile-$name-$tool.log
	"$bin" profile -v -d "${SECS}s" --format folded "$pid" >"$OUT/profile-$name-$tool.folded" \
		2>"$log" || true
	python3 - "$log" "$name" "$tool" >>"$OUT/profile.tsv" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
s = re.search(r"(\d+) distinct stacks symbolized in ([\d.]+) ms", t)
r = re.search(r"sampling: (\d+) samples in [\d.]+ s \(([\d.]+) Hz\)", t)
c = re.search(r"stackdump CPU: ([\d.]+) s", t)
print("\t".join([sys.argv[2], sys.argv[3], s.group(1) if s else "?", s.group(2) if s else "?",
                 r.group(1) if r else "?", r.group(2) if r else "?", c.group(1) if c else "?"]))
EOF
}
for tgt in mariadbd:$MYSQLD node:$NODE; do
	name=${tgt%%:*} pid=${tgt#*:}
	bench_log "profile of $name ($pid), ${SECS}s each: before, after"
	profile_row "$name" before "$BEFORE" "$pid"
	profile_row "$name" after "$STACKDUMP" "$pid"
done

# --- one-shot dumps: symbolize time per distinct address ---------------------
printf 'target\ttool\tdumps\tframes\tsymbolize_ms\tper_frame_us\n' >"$OUT/dump.tsv"
dump_rows() {
	local name=$1 pid=$2 k tool bin
	for ((k = 0; k < 5; k++)); do
		for tool in before after; do
			bin=$BEFORE
			[[ $tool == after ]] && bin=$STACKDUMP
			"$bin" --format json "$pid" >"$OUT/dump-$name-$tool-$k.json" 2>/dev/null || true
		done
	done
	for tool in before after; do
		python3 - "$name" "$tool" "$OUT"/dump-"$name"-"$tool"-*.json >>"$OUT/dump.tsv" <<'EOF'
import json, sys
name, tool, files = sys.argv[1], sys.argv[2], sys.argv[3:]
frames = us = n = 0
for f in files:
    try:
        d = json.load(open(f))
    except Exception:
        continue
    n += 1
    us += d["timings"]["symbolize_us"]
    # each process symbolizes from cold: count its distinct addresses
    frames += len({(fr["module"], fr["offset"]) for t in d["threads"] for fr in t["frames"]
                   if not fr.get("inlined")})
print("\t".join(map(str, [name, tool, n, frames, round(us / 1000, 1),
                          round(us / frames, 1) if frames else "?"])))
EOF
	done
}
bench_log "one-shot dumps of mariadbd and node: before, after, interleaved"
dump_rows mariadbd "$MYSQLD"
dump_rows node "$NODE"

# --- the same mariadbd addresses through eu-addr2line and addr2line ----------
python3 - "$OUT"/dump-mariadbd-after-*.json >"$OUT/mariadbd.addrs" <<'EOF'
import json, sys
seen = set()
for f in sys.argv[1:]:
    d = json.load(open(f))
    for t in d["threads"]:
        for i, fr in enumerate(t["frames"]):
            if fr["module"] == "mariadbd" and not fr.get("inlined"):
                # the address looked up: the call's, for return addresses
                seen.add(int(fr["offset"], 16) - (0 if i == 0 else 1))
print("\n".join("0x%x" % a for a in sorted(seen)))
EOF
NADDR=$(wc -l <"$OUT/mariadbd.addrs")
MARIADBD=$(readlink -f /proc/"$MYSQLD"/exe)
tool_time() { # prints user+sys seconds of CMD
	"$TIME_BIN" -f '%U %S' -o "$OUT/time.tmp" "$@" >/dev/null 2>&1 || true
	awk '{print $1 + $2}' "$OUT/time.tmp"
}
printf 'tool\taddresses\tcpu_s\tper_address_us\n' >"$OUT/addr2line.tsv"
for tool in eu-addr2line addr2line; do
	s=$(tool_time $tool -i -f -C -e "$MARIADBD" $(cat "$OUT/mariadbd.addrs"))
	printf '%s\t%s\t%s\t%s\n' "$tool" "$NADDR" "$s" \
		"$(awk -v s="$s" -v n="$NADDR" 'BEGIN{printf "%.1f", n ? s * 1e6 / n : 0}')" \
		>>"$OUT/addr2line.tsv"
done

echo "== profiles (${SECS}s each, same load)"
column -t -s $'\t' "$OUT/profile.tsv"
echo "== one-shot dumps (5 each, interleaved)"
column -t -s $'\t' "$OUT/dump.tsv"
echo "== the same $NADDR mariadbd addresses, cold, whole run"
column -t -s $'\t' "$OUT/addr2line.tsv"
