#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Symbolization cost on large binaries: MariaDB under sysbench load and a
# busy node, in the same run, for two stackdump binaries (BEFORE, the one
# to compare against, and STACKDUMP): a profile of each (its distinct
# stacks, the time spent symbolizing them, the rate it kept, its CPU), then
# one-shot dumps of each (their CPU), then the CPU cost per distinct
# address of each engine (bench/symcost.c linked with the engine library
# next to each binary) beside eu-addr2line and addr2line on the same
# addresses of mariadbd and node.
#
# Needs: mariadb-server, sysbench, nodejs (Debian packages, for this bench
# only), elfutils (eu-addr2line), binutils (addr2line), python3, setsid,
# /usr/bin/time, cc and the -dev packages stackdump builds with.
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

# --- MariaDB under sysbench load -------------------------------------------
bench_start_mariadb "$OUT" --innodb-buffer-pool-size=256M
bench_log "sysbench: preparing"
"${SB[@]}" prepare >"$OUT/sysbench-prepare.log" 2>&1 || bench_die "sysbench prepare failed"
LOADSECS=$((4 * SECS + 60))
bench_spawn "$OUT/sysbench.out" "$OUT/sysbench.err" "${SB[@]}" --threads=4 --time="$LOADSECS" run
sleep 2

# --- a busy node -------------------------------------------------------------
# The test suite's node fixture: JIT code hashing, sorting and parsing JSON.
bench_start_target "$OUT/node.out" node "$(dirname "$0")/../tests/fixtures/fx-node.js"
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

# --- one-shot dumps: addresses, and the whole dump's CPU -------------------
printf 'target\ttool\tdumps\tframes\tsymbolize_wall_ms\tcpu_ms_per_dump\n' >"$OUT/dump.tsv"
dump_rows() {
	local name=$1 pid=$2 k tool bin
	for ((k = 0; k < 5; k++)); do
		for tool in before after; do
			bin=$BEFORE
			[[ $tool == after ]] && bin=$STACKDUMP
			"$TIME_BIN" -f '%U %S' -o "$OUT/dump-$name-$tool-$k.time" \
				"$bin" --format json "$pid" >"$OUT/dump-$name-$tool-$k.json" 2>/dev/null || true
		done
	done
	for tool in before after; do
		python3 - "$name" "$tool" "$OUT"/dump-"$name"-"$tool"-*.json >>"$OUT/dump.tsv" <<'EOF'
import json, sys
name, tool, files = sys.argv[1], sys.argv[2], sys.argv[3:]
frames = us = n = 0
cpu = 0.0
for f in files:
    try:
        d = json.load(open(f))
        u, s = open(f[:-5] + ".time").read().split()[-2:]
    except Exception:
        continue
    n += 1
    cpu += float(u) + float(s)
    us += d["timings"]["symbolize_us"]
    frames += len({(fr["module"], fr["offset"]) for t in d["threads"] for fr in t["frames"]
                   if not fr.get("inlined")})
print("\t".join(map(str, [name, tool, n, frames, round(us / 1000, 1),
                          round(cpu * 1000 / n, 1) if n else "?"])))
EOF
	done
}
bench_log "one-shot dumps of mariadbd and node: before, after, interleaved"
dump_rows mariadbd "$MYSQLD"
dump_rows node "$NODE"

# --- per distinct address: the engines and eu-addr2line/addr2line ------------
# symcost (bench/symcost.c) linked with each stackdump's engine library:
# the build directory of a binary has it, its CMakeCache names the sources.
build_symcost() { # BIN OUT
	local dir src
	dir=$(dirname "$(readlink -f "$1")")
	src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$dir/CMakeCache.txt" 2>/dev/null)
	[[ -f $dir/libstackdump_engine.a && -d $src/src ]] ||
		bench_die "no engine library next to $1 (build it with cmake)"
	# shellcheck disable=SC2046  # pkg-config prints several words
	# The engine's headers: in the stage folders of src/ (older trees: src/).
	local incs=(-I"$src/src") d
	for d in "$src"/src/*/; do incs+=(-I"$d"); done
	$CC -O2 "${incs[@]}" -I/usr/include/libiberty "$BENCH_DIR/symcost.c" \
		"$dir/libstackdump_engine.a" $(pkg-config --libs libdw libunwind-generic jansson libdeflate \
		libprotobuf-c zlib) -liberty -lm -lpthread -o "$2" || bench_die "symcost build failed"
}
build_symcost "$BEFORE" "$OUT/symcost-before"
build_symcost "$STACKDUMP" "$OUT/symcost-after"

# The distinct physical frames of the dumps: runtime addresses for symcost,
# file addresses (minus one: return addresses) for the addr2lines.
addrs_of() { # NAME
	python3 - "$1" "$OUT/$1.addrs" "$OUT/$1.file-addrs" "$OUT"/dump-"$1"-after-*.json <<'EOF'
import json, sys
mod, out_rt, out_file, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
rt, fa = set(), set()
for f in files:
    d = json.load(open(f))
    for t in d["threads"]:
        for fr in t["frames"]:
            if fr.get("inlined"):
                continue
            rt.add(int(fr["addr"], 16))
            if fr["module"] == mod:
                fa.add(int(fr["offset"], 16) - 1)
open(out_rt, "w").write("".join("%x\n" % a for a in sorted(rt)))
open(out_file, "w").write("".join("0x%x\n" % a for a in sorted(fa)))
EOF
}
cpu_of() { # CMD...: user+sys seconds
	"$TIME_BIN" -f '%U %S' -o "$OUT/time.tmp" "$@" >/dev/null 2>&1 || true
	tail -1 "$OUT/time.tmp" | awk '{print $1 + $2}'
}
printf 'target\ttool\taddresses\tper_address_us\tsetup_ms\n' >"$OUT/per-address.tsv"
for tgt in mariadbd:$MYSQLD node:$NODE; do
	name=${tgt%%:*} pid=${tgt#*:}
	addrs_of "$name"
	for tool in before after; do
		"$OUT/symcost-$tool" "$pid" <"$OUT/$name.addrs" >"$OUT/symcost-$name-$tool.out"
		awk -v n="$name" -v t="stackdump-$tool" '{for (i = 1; i < NF; i++) v[$i] = $(i + 1)
			printf "%s\t%s\t%s\t%s\t%s\n", n, t, v["addresses"], v["per_address_us"],
			v["setup_cpu_ms"]}' "$OUT/symcost-$name-$tool.out" >>"$OUT/per-address.tsv"
	done
	# eu-addr2line and addr2line on the module's own addresses: one
	# address, then all of them; the difference is what the others cost.
	exe=$(readlink -f /proc/"$pid"/exe)
	n=$(wc -l <"$OUT/$name.file-addrs")
	one=$(head -1 "$OUT/$name.file-addrs")
	for tool in eu-addr2line addr2line; do
		t1=$(cpu_of $tool -i -f -C -e "$exe" "$one")
		# shellcheck disable=SC2046  # one argument per address
		tn=$(cpu_of $tool -i -f -C -e "$exe" $(cat "$OUT/$name.file-addrs"))
		awk -v nm="$name" -v tl="$tool" -v n="$n" -v t1="$t1" -v tn="$tn" 'BEGIN {
			per = n > 1 ? (tn - t1) * 1e6 / (n - 1) : 0
			printf "%s\t%s\t%d\t%.1f\t%.1f\n", nm, tl, n - 1, per, t1 * 1e3 }' \
			>>"$OUT/per-address.tsv"
	done
done

echo "== profiles (${SECS}s each, same load; symbolize_ms is wall time)"
column -t -s $'\t' "$OUT/profile.tsv"
echo "== one-shot dumps (5 each, interleaved; CPU of the whole dump)"
column -t -s $'\t' "$OUT/dump.tsv"
echo "== per distinct address (CPU; setup: the first lookup in each module,"
echo "   or the addr2line run with one address, loading included)"
column -t -s $'\t' "$OUT/per-address.tsv"
