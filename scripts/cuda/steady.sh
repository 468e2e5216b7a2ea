# shellcheck shell=bash
# Sourced by scripts/cuda/bench.sh and device-step.sh: the steady rate of a training run.
#
# steady_rate CSV WARM prints, from a train log as `metrics curves --csv` writes it: the
# mean seconds per step over the steps after the first WARM, the number of steps that mean
# is over, the steps left out of it, the log's elapsed_s at its last step and that step,
# and the seconds the steps left out took. A step is its elapsed_s less the step before's. Left out are the steps at whose end
# the learning rate drops: the schedule's new Adam is no part of a step (a run of 150 steps
# has its two drops, a 300k-step run the same two), and the host's share of it once cost
# 0.2–0.4 s at the paper configurations, which spread over 130 steps read as 1.5–2.7 ms a
# step more than the loop's steady pace.
steady_rate() {
	awk -F, -v w="$2" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["kind"] == "train" { s = $c["step"]; t[s] = $c["elapsed_s"]; lr[s] = $c["lr"]; last = s }
		END {
			n = 0; sum = 0; out = 0; outSum = 0
			for (s = w; s <= last; s++) {
				if (!((s - 1) in t) || !(s in t)) { printf "steady_rate: step %d or %d missing from the log\n", s - 1, s > "/dev/stderr"; exit 1 }
				if (s < last && lr[s + 1] != lr[s]) { out++; outSum += t[s] - t[s - 1]; continue }
				sum += t[s] - t[s - 1]; n++
			}
			if (n == 0) { print "steady_rate: no steps after the first " w > "/dev/stderr"; exit 1 }
			printf "%.9f %d %d %s %d %.6f\n", sum / n, n, out, t[last], last, outSum
		}' "$1"
}
