# Sourced by scripts/cuda/bench.sh and device-step.sh: the steady rate of a training run.
#
# steady_elapsed CSV WARM prints the train log's elapsed_s at the end of step WARM−1 and at
# its last step, and that last step (a train log as `metrics curves --csv` writes it);
# the rate over the steps after the first WARM is (last − first)/(steps − WARM).
steady_elapsed() {
	awk -F, -v w="$2" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["kind"] == "train" && $c["step"] == w - 1 { a = $c["elapsed_s"] }
		$c["kind"] == "train" { b = $c["elapsed_s"]; s = $c["step"] }
		END { print a, b, s }' "$1"
}
