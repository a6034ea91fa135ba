#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sampling-cost benchmark: how much throughput a CPU-bound 100-thread target
# loses while `stackdump profile` samples it, with the ptrace engine and
# with the perf engine, beside bench/ptrace-floor (baseline and sampling
# windows interleaved in the same run, and a last baseline: each window is
# also measured against the baselines before and after it), stackdump's own
# CPU use and the thread samples each engine delivered, the loss split into
# the CPU the target did not get (its threads' CPU time, from /proc: steady
# on a noisy host) and its work per CPU second, and the highest snapshot
# rate stackdump, a gdb loop and an eu-stack loop sustain on it.
#
# Needs: cc, python3, gdb, eu-stack, /usr/bin/time, setsid, timeout.
#   apt-get install -y time gdb elfutils   (the script checks and says so)
# Env: STACKDUMP=path (default build/stackdump), BENCH_BUILD_DIR, CC.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: $0 [options]
  -n N              worker threads in cpu-target (default 100)
  -s N              sleeping threads in cpu-target besides the workers (default 0)
  --no-floor        skip the ptrace-floor windows
  --window S        length of each baseline / sampling window (default 10)
  --rate HZ         sampling rate of the throughput windows (default 20)
  --pairs P         baseline+sampling window pairs (default 2)
  --max-rate HZ     rate asked of stackdump in the max-rate test (default 1000)
  --loop S          length of each max-rate test (default 10)
  --no-max          skip the max-rate tests
EOF
}

NTHREADS=100 NSLEEPERS=0 DO_FLOOR=1 WINDOW=10 RATE=20 PAIRS=2 MAXRATE=1000 LOOP=10 DO_MAX=1
while (($#)); do
	case $1 in
	-n) NTHREADS=$2; shift 2 ;;
	-s) NSLEEPERS=$2; shift 2 ;;
	--no-floor) DO_FLOOR=0; shift ;;
	--window) WINDOW=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--pairs) PAIRS=$2; shift 2 ;;
	--max-rate) MAXRATE=$2; shift 2 ;;
	--loop) LOOP=$2; shift 2 ;;
	--no-max) DO_MAX=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

bench_require cc python3 time setsid timeout
((DO_MAX)) && bench_require gdb eu-stack
bench_have_stackdump || bench_die "$STACKDUMP not found (build it or set STACKDUMP=)"
bench_traps
bench_build

WORK=$BUILD_DIR/profile # output of the latest run only
rm -rf "$WORK"
mkdir -p "$WORK"
WORKFILE=$WORK/work.shm
RESULTS=$WORK/results.tsv
TMO=$((WINDOW > LOOP ? WINDOW * 3 + 60 : LOOP * 3 + 60))

bench_log "starting cpu-target: $NTHREADS threads"
bench_start_target "$WORK/target.out" "$BUILD_DIR/cpu-target" -n "$NTHREADS" -s "$NSLEEPERS" \
	-w "$WORKFILE" -t $(((PAIRS * 2 * WINDOW + 3 * LOOP) * 3 + 600))
NTASKS=$(ls /proc/"$TARGET_PID"/task | wc -l)
bench_log "target pid $TARGET_PID ready ($NTASKS threads); warming up 2 s"
sleep 2

printf 'phase\ttool\twork\tsecs\tcpu_s\twall_s\tstacks\tsnapshots\trc\tstopped\ttarget_cpu_s\n' >"$RESULTS"

# sum of the trailing counts of a folded-stacks file
folded_total() {
	awk '{n = $NF} n ~ /^[0-9]+$/ {s += n} END {print s + 0}' "$1" 2>/dev/null || echo 0
}

# phase tool work secs cpu wall stacks snapshots rc stopped target_cpu
record_row() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"
}

# CPU time the target's threads used so far (user+sys), in clock ticks.
target_ticks() {
	awk '{sub(/^.*\) /, ""); print $12 + $13}' /proc/"$TARGET_PID"/stat 2>/dev/null || echo 0
}

# run_window PHASE TOOL CMD...: measure target work while CMD runs (or while
# sleeping WINDOW seconds when CMD is empty).
run_window() {
	local phase=$1 tool=$2
	shift 2
	local w0 t0 w1 t1 c0 c1 cpu=0 wall=0 rc=0 stopped=0
	c0=$(target_ticks)
	read -r w0 t0 < <(bench_work "$WORKFILE")
	if (($#)); then
		bench_timed "$TMO" "$WORK/$phase.out" "$WORK/$phase.err" "$@"
		cpu=$(awk -v u="$RUN_USER" -v s="$RUN_SYS" 'BEGIN{print u+s}')
		wall=$RUN_WALL rc=$RUN_RC
	else
		sleep "$WINDOW"
	fi
	read -r w1 t1 < <(bench_work "$WORKFILE")
	c1=$(target_ticks)
	kill -0 "$TARGET_PID" 2>/dev/null || bench_die "target died during $phase"
	(($#)) && stopped=$(bench_check_stopped "$TARGET_PID")
	local secs
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", (b-a)/1e9}')
	local tcpu
	tcpu=$(awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", (b-a)/hz}')
	WIN_ROW=("$phase" "$tool" $((w1 - w0)) "$secs" "$cpu" "$wall" "$rc" "$stopped" "$tcpu")
	local msg
	msg=$(printf '%-14s %-20s %10.0f units/s over %5.2f s' "$phase" "$tool" \
		"$(awk -v w=$((w1 - w0)) -v s="$secs" 'BEGIN{print w/s}')" "$secs")
	(($#)) && msg+=$(printf '; sampler cpu %.2f s, wall %.2f s, rc %s' "$cpu" "$wall" "$rc")
	bench_log "$msg"
	((stopped > 0)) && bench_log "WARNING: $tool left $stopped thread(s) stopped"
	return 0
}

# Row for a stackdump profile window: stacks = sum of the folded counts;
# snapshots = the "N samples" stackdump reports on stderr, or else
# stacks / threads in the target.
record_profile_row() {
	local folded=$1 err=$2 stacks snaps r=("${WIN_ROW[@]}")
	stacks=$(folded_total "$folded")
	snaps=$(grep -oE '[0-9]+ samples' "$err" 2>/dev/null | tail -n 1 | cut -d' ' -f1)
	[[ -n $snaps ]] || snaps=$(awk -v s="$stacks" -v n="$NTASKS" 'BEGIN{printf "%.1f", s/n}')
	record_row "${r[@]:0:6}" "$stacks" "$snaps" "${r[6]}" "${r[7]}" "${r[8]}"
}

# --- throughput: interleaved baseline / sampling windows -------------------
ptrace_window() {
	local out=$WORK/sample$1.folded
	run_window "sampling$1" "stackdump-ptrace@${RATE}Hz" "$STACKDUMP" profile "$TARGET_PID" \
		--engine ptrace --rate "$RATE" --duration "$WINDOW" --format folded -o "$out" -v
	record_profile_row "$out" "$WORK/sampling$1.err"
}

perf_window() {
	local out=$WORK/perf$1.folded
	run_window "perf$1" "stackdump-perf@${RATE}Hz" "$STACKDUMP" profile "$TARGET_PID" \
		--engine perf --rate "$RATE" --duration "$WINDOW" --format folded -o "$out" -v
	record_profile_row "$out" "$WORK/perf$1.err"
	grep -E '^perf: ' "$WORK/perf$1.err" | sed 's/^/    /' >&2
}

baseline_window() {
	run_window "baseline$1" "none"
	local r=("${WIN_ROW[@]}")
	record_row "${r[@]:0:6}" 0 0 "${r[6]}" "${r[7]}" "${r[8]}"
}

for ((p = 1; p <= PAIRS; p++)); do
	baseline_window "$p"

	# The engines take turns going first: a window's place after the
	# baseline must not count for one engine.
	if ((p % 2)); then
		ptrace_window "$p"
		perf_window "$p"
	else
		perf_window "$p"
		ptrace_window "$p"
	fi

	# The floor: the same stop-the-world ptrace sampling with nothing
	# else (threads stay seized between samples; registers only, no
	# stack copy, unwinding or symbols). What any ptrace sampler pays.
	if ((DO_FLOOR)); then
		run_window "floor$p" "ptrace-floor@${RATE}Hz" "$BUILD_DIR/ptrace-floor" -p "$TARGET_PID" \
			-r "$RATE" -d "$WINDOW"
		r=("${WIN_ROW[@]}")
		n=$(grep -oE 'samples [0-9]+' "$WORK/floor$p.out" | cut -d' ' -f2)
		[[ -n $n ]] || n=0
		record_row "${r[@]:0:6}" $((n * NTASKS)) "$n" "${r[6]}" "${r[7]}" "${r[8]}"
	fi
done

# A last baseline: each sampling window is then also measured against the
# baselines just before and after it (the host drifts over minutes).
baseline_window $((PAIRS + 1))

# --- max sustained snapshot rate -------------------------------------------
# loop_cmd SECONDS CMD...: run CMD back to back until SECONDS have passed,
# print how many runs succeeded.
LOOPER='end=$(( ${EPOCHREALTIME/./} + $1 * 1000000 )); shift; n=0
while (( ${EPOCHREALTIME/./} < end )); do "$@" >/dev/null 2>&1 && n=$((n + 1)); done
echo "$n"'

if ((DO_MAX)); then
	out=$WORK/max-stackdump.folded
	run_window "max-stackdump" "stackdump@${MAXRATE}Hz" "$STACKDUMP" profile "$TARGET_PID" \
		--rate "$MAXRATE" --duration "$LOOP" --format folded -o "$out"
	record_profile_row "$out" "$WORK/max-stackdump.err"

	run_window "max-gdb" "gdb loop" bash -c "$LOOPER" looper "$LOOP" \
		gdb -nx -batch -ex 'set pagination off' -ex 'set debuginfod enabled off' \
		-ex 'thread apply all bt' -p "$TARGET_PID"
	r=("${WIN_ROW[@]}")
	n=$(tail -n 1 "$WORK/max-gdb.out")
	[[ $n =~ ^[0-9]+$ ]] || n=0
	record_row "${r[@]:0:6}" $((n * NTASKS)) "$n" "${r[6]}" "${r[7]}" "${r[8]}"

	run_window "max-eu-stack" "eu-stack -i loop" bash -c "$LOOPER" looper "$LOOP" \
		eu-stack -i -p "$TARGET_PID"
	r=("${WIN_ROW[@]}")
	n=$(tail -n 1 "$WORK/max-eu-stack.out")
	[[ $n =~ ^[0-9]+$ ]] || n=0
	record_row "${r[@]:0:6}" $((n * NTASKS)) "$n" "${r[6]}" "${r[7]}" "${r[8]}"
fi

python3 - "$RESULTS" "$NTHREADS" "$NTASKS" "$RATE" "$MAXRATE" "$STACKDUMP" <<'PY'
import csv, re, statistics, sys

path, nthreads, ntasks, rate, maxrate, sdpath = sys.argv[1:]
rows = list(csv.DictReader(open(path), delimiter="\t"))
for r in rows:
    r["rate"] = int(r["work"]) / float(r["secs"])
    # The target's CPU time in the window: the CPU it got (share), and its
    # work per CPU second (what each second of it achieved).
    r["tcpu"] = float(r.get("target_cpu_s") or 0)
    r["share"] = r["tcpu"] / float(r["secs"])
    r["eff"] = int(r["work"]) / r["tcpu"] if r["tcpu"] > 0 else 0.0
    r["cpu_pct"] = (100 * float(r["cpu_s"]) / float(r["wall_s"])
                    if float(r["wall_s"]) > 0 else 0.0)
base = [r for r in rows if r["phase"].startswith("baseline")]
samp = [r for r in rows if r["phase"].startswith("sampling")]
perf = [r for r in rows if r["phase"].startswith("perf")]
floor = [r for r in rows if r["phase"].startswith("floor")]
mx = [r for r in rows if r["phase"].startswith("max-")]
brate = sum(r["rate"] for r in base) / len(base)
bshare = sum(r["share"] for r in base) / len(base)
beff = sum(r["eff"] for r in base) / len(base)


def say_split(rs, why=""):
    """The loss of the windows RS (their mean) split: the CPU the target did
    not get, and the change of its work per CPU second, both in % of the
    baselines'; WHY is said after the second."""
    share = sum(r["share"] for r in rs) / len(rs)
    eff = sum(r["eff"] for r in rs) / len(rs)
    a = 100 * (1 - share / bshare) if bshare else 0.0
    b = 100 * (1 - eff / beff) if beff else 0.0
    print(f"  of the loss: CPU the target did not get {a:.1f}%, its work per CPU "
          f"second {-b:+.1f}%{why}")

def loss(r):
    return 100 * (1 - r["rate"] / brate)


def pair_of(r):
    m = re.search(r"(\d+)$", r["phase"])
    return int(m.group(1)) if m else 0


def adjacent(rs):
    """Loss of each window of RS against the mean of the baselines just
    before and after it: (mean, median, [each]) in %."""
    by = {pair_of(b): b["rate"] for b in base}
    each = []
    for r in rs:
        k = pair_of(r)
        near = [by[j] for j in (k, k + 1) if j in by]
        if near:
            each.append(100 * (1 - r["rate"] / (sum(near) / len(near))))
    if not each:
        return None
    return sum(each) / len(each), statistics.median(each), each


HOW = " (kernel work in its threads' time, caches, the host)"


def say_adjacent(rs):
    a = adjacent(rs)
    if a:
        print(f"  against the baselines before and after each window: mean {a[0]:.1f}%, "
              f"median {a[1]:.1f}% (" + ", ".join(f"{x:.1f}" for x in a[2]) + ")")

def fmt_table(table):
    w = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    out = []
    for i, r in enumerate(table):
        out.append("  ".join(c.ljust(w[j]) if j < 2 else c.rjust(w[j])
                             for j, c in enumerate(r)))
        if i == 0:
            out.append("  ".join("-" * x for x in w))
    return "\n".join(out)

print()
print(f"profile benchmark: cpu-target with {nthreads} busy workers "
      f"({ntasks} threads in the target), 2-core machine")
print(f"stackdump: {sdpath}")
print()
t = [["window", "sampler", "work units/s", "vs baseline", "secs",
      "sampler cpu % core", "stacks", "snapshots/s", "target cpu", "work/cpu-s"]]
for r in rows:
    if r["phase"].startswith("max-"):
        continue
    is_s = r["phase"].startswith(("sampling", "perf", "floor"))
    wall = float(r["wall_s"]) or float(r["secs"])
    t.append([r["phase"], r["tool"], f"{r['rate']:.0f}",
              f"{-loss(r):+.1f}%", f"{float(r['secs']):.1f}",
              f"{r['cpu_pct']:.1f}" if is_s else "-",
              r["stacks"] if is_s else "-",
              f"{float(r['snapshots']) / wall:.1f}" if is_s else "-",
              f"{r['share']:.3f}", f"{r['eff']:.0f}"])
print(fmt_table(t))
if samp:
    srate = sum(r["rate"] for r in samp) / len(samp)
    cpu = sum(r["cpu_pct"] for r in samp) / len(samp)
    spread = (100 * (max(r["rate"] for r in base) - min(r["rate"] for r in base))
              / brate)
    print()
    note = (f"  (baseline windows differ by {spread:.1f}% from each other: noise)"
            if len(base) > 1 else "  (one baseline window: no noise estimate)")
    print(f"target throughput loss while stackdump (ptrace engine) samples at {rate} Hz: "
          f"{100 * (1 - srate / brate):.1f}%{note}")
    say_adjacent(samp)
    print(f"stackdump CPU use at {rate} Hz: {cpu:.1f}% of one core (user+sys)")
    say_split(samp, HOW)
    want = int(float(rate) * float(samp[0]["secs"]) + 0.5)
    print(f"thread samples per window: " +
          ", ".join(r["stacks"] for r in samp) +
          f" (a full count would be about {ntasks} x {want})")
if perf:
    prate = sum(r["rate"] for r in perf) / len(perf)
    pcpu = sum(r["cpu_pct"] for r in perf) / len(perf)
    print(f"target throughput loss while stackdump (perf engine) samples at {rate} Hz: "
          f"{100 * (1 - prate / brate):.1f}%")
    say_adjacent(perf)
    print(f"stackdump CPU use (perf engine) at {rate} Hz: {pcpu:.1f}% of one core (user+sys)")
    say_split(perf, HOW)
    print(f"thread samples per window (perf): " + ", ".join(r["stacks"] for r in perf) +
          f"; snapshots: " + ", ".join(r["snapshots"] for r in perf))
if floor:
    frate = sum(r["rate"] for r in floor) / len(floor)
    fcpu = sum(r["cpu_pct"] for r in floor) / len(floor)
    print(f"floor (ptrace-floor: stop, read registers, resume; nothing else) at {rate} Hz: "
          f"target loss {100 * (1 - frate / brate):.1f}%, {fcpu:.1f}% of one core")
    say_adjacent(floor)
    say_split(floor)
if mx:
    print()
    print("highest sustained snapshot rate (each sampler running flat out for "
          "the same time on the same target):")
    t = [["test", "sampler", "snapshots/s", "vs stackdump", "target loss",
          "sampler cpu % core", "stacks", "rc"]]
    ref = None
    for r in mx:
        wall = float(r["wall_s"]) or float(r["secs"])
        r["sps"] = float(r["snapshots"]) / wall
        if r["phase"] == "max-stackdump":
            ref = r["sps"]
    for r in mx:
        if ref and r["sps"] > 0:
            q = r["sps"] / ref
            rel = ("same" if abs(q - 1) < 0.005 else
                   f"{q:.1f}x more" if q > 1 else f"{1 / q:.1f}x fewer")
        else:
            rel = "n/a"
        t.append([r["phase"], r["tool"], f"{r['sps']:.2f}", rel,
                  f"{loss(r):.1f}%", f"{r['cpu_pct']:.1f}", r["stacks"], r["rc"]])
    print(fmt_table(t))
    print(f"(stackdump asked for {maxrate} Hz; snapshots/s = samples it reports, "
          f"or folded stacks / {ntasks} threads, / wall time; loops count "
          f"completed runs)")
bad = [r["tool"] for r in rows if int(r["stopped"] or 0)]
if bad:
    print("WARNING: threads left in t/T state after: " + ", ".join(bad))
PY
bench_log "raw results: $RESULTS"
