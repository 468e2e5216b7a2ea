#!/usr/bin/env bash
# The one command to run on a GPU host (`make gpu-check`): prints the device, builds with
# -tags cuda and runs the GPU tests (every kernel on the real device against the CPU
# reference, the error paths, the device update and the device ranks against the CPU
# model, 200 training steps against the CPU's loss curve, the kernels' throughput), then
# the emulator and PTX tests, and then the benchmarks of scripts/cuda/bench.sh (training
# steps/s at the paper configurations, the 300k-step projection, rank against the
# bandwidth bound).
#
# Usage (from anywhere in the repository):
#   scripts/cuda/gpu-check.sh                    build here and test (needs Go, cgo, cuda.h)
#   scripts/cuda/gpu-check.sh --build-test-binary DIR
#                                                only build DIR/cuda.test, DIR/gpumodel.test and
#                                                DIR/train.test (on a machine with
#                                                nvidia-cuda-dev, no GPU needed), to carry to
#                                                a GPU host that lacks Go, the module cache or
#                                                cuda.h
#   scripts/cuda/gpu-check.sh --prebuilt DIR/cuda.test
#                                                run such binaries on the GPU host (needs only
#                                                the NVIDIA driver's libcuda.so.1)
#   add --short to skip the throughput timings and the benchmarks (with --prebuilt the
#   benchmarks are a second command: scripts/cuda/bench.sh DIR, with the stage binaries of
#   `make build-cuda` in DIR).
#
# Environment: CUDA_HOME (where include/cuda.h is, if not /usr/local/cuda or /usr),
# CUDA_VISIBLE_DEVICES (the tests use device 0 of those visible).
#
# Exit status: 0 when every step passed.
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
mode=build
arg=""
short=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build-test-binary) mode=binary; arg=${2:?--build-test-binary needs a directory}; shift ;;
	--prebuilt) mode=prebuilt; arg=${2:?--prebuilt needs the test binary}; shift ;;
	--short) short=(-test.short) ;;
	-h | --help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "gpu-check.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done

failed=()
step() { echo; echo "== $*"; }

# cgo needs cuda.h and a libcuda.so to link against (the real one or the stub).
setup_cgo() {
	local inc="" d
	for d in "${CUDA_HOME:-}" /usr/local/cuda /usr; do
		if [ -n "$d" ] && [ -f "$d/include/cuda.h" ]; then inc="$d/include"; break; fi
	done
	if [ -z "$inc" ]; then
		echo "gpu-check.sh: cuda.h not found (CUDA_HOME, /usr/local/cuda, /usr)." >&2
		echo "  Debian bookworm: scripts/cuda/install-deps.sh (nvidia-cuda-dev). Or build the test binary" >&2
		echo "  elsewhere with --build-test-binary DIR and run it here with --prebuilt DIR/cuda.test." >&2
		exit 2
	fi
	export CGO_CFLAGS="${CGO_CFLAGS:-} -I$inc"
	# A libcuda.so to link: Debian's libcuda1 provides one; a driver-only install may have
	# just libcuda.so.1 (link against it through a symlink) or the toolkit's stub.
	local so="" dir
	for dir in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib/aarch64-linux-gnu /usr/local/cuda/lib64 "${CUDA_HOME:-/nonexistent}/lib64"; do
		if [ -e "$dir/libcuda.so" ]; then so=found; break; fi
	done
	if [ -z "$so" ]; then
		local one
		one=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
		for stub in /usr/lib/x86_64-linux-gnu/stubs/libcuda.so /usr/local/cuda/lib64/stubs/libcuda.so "${CUDA_HOME:-/nonexistent}/lib64/stubs/libcuda.so"; do
			if [ -z "$one" ] && [ -e "$stub" ]; then one=$stub; fi
		done
		if [ -z "$one" ]; then
			echo "gpu-check.sh: no libcuda.so / libcuda.so.1 to link against (is the NVIDIA driver installed?)" >&2
			exit 2
		fi
		local tmp
		tmp=$(mktemp -d)
		ln -s "$one" "$tmp/libcuda.so"
		export CGO_LDFLAGS="${CGO_LDFLAGS:-} -L$tmp"
		echo "linking against $one (CGO_LDFLAGS=$CGO_LDFLAGS)"
	fi
	echo "cuda.h: $inc/cuda.h"
}

device_info() {
	step "device"
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,compute_cap --format=csv ||
			nvidia-smi || true
		if ! nvidia-smi -L >/dev/null 2>&1; then
			echo "gpu-check.sh: nvidia-smi sees no GPU; the cuda-tagged binary would stop at start-up." >&2
			exit 3
		fi
	else
		echo "nvidia-smi not found; relying on the CUDA driver (a binary built with -tags cuda stops at start-up without a GPU)"
	fi
}

run_tests() { # $1: a test binary, or empty for go test
	step "opening the GPU (TestGPUInfo)"
	local ok=0
	if [ -n "$1" ]; then
		"$1" -test.run '^TestGPUInfo$' -test.count=1 && ok=1
	else
		go test -tags cuda -count=1 -run '^TestGPUInfo$' ./pkg/gpu/ && ok=1
	fi
	if [ "$ok" -eq 0 ]; then
		echo "gpu-check: FAILED: the GPU cannot be used (see above)" >&2
		exit 3
	fi
	step "GPU: parity of every kernel vs the CPU reference, error paths, determinism, throughput"
	if [ -n "$1" ]; then
		local dir
		dir=$(dirname "$1")
		"$1" -test.run '^TestGPU' -test.v -test.count=1 "${short[@]}" || failed+=("GPU tests")
		step "GPU: the device-resident model vs the CPU (training step: loss and every gradient; ranks, also from cones and with scores; cones)"
		"$dir/gpumodel.test" -test.run '^TestGPU' -test.v -test.count=1 || failed+=("GPU step tests")
		step "GPU: 200 training steps vs the CPU (loss curves), two GPU runs bit-identical"
		"$dir/train.test" -test.run '^TestGPU' -test.v -test.count=1 || failed+=("GPU training tests")
		step "emulator parity (CPU) in the same binary"
		"$1" -test.run 'TestEmulatorParity' -test.count=1 || failed+=("emulator tests")
	else
		local gs=()
		[ ${#short[@]} -gt 0 ] && gs=(-short)
		go test -tags cuda -count=1 -v -run '^TestGPU' "${gs[@]}" ./pkg/gpu/ || failed+=("GPU tests")
		step "GPU: the device-resident model vs the CPU (training step: loss and every gradient; ranks, also from cones and with scores; cones)"
		go test -tags cuda -count=1 -v -run '^TestGPU' ./pkg/gpu/gpumodel/ || failed+=("GPU step tests")
		step "GPU: 200 training steps vs the CPU (loss curves), two GPU runs bit-identical"
		go test -tags cuda -count=1 -v -run '^TestGPU' ./pkg/train/ || failed+=("GPU training tests")
		step "emulator, PTX and host tests (-tags cuda)"
		go test -tags cuda -count=1 ./pkg/gpu/... || failed+=("package tests")
	fi
}

case "$mode" in
binary)
	setup_cgo
	mkdir -p "$arg"
	step "building $arg/cuda.test, gpumodel.test, train.test (go test -c -tags cuda)"
	go test -c -tags cuda -o "$arg/cuda.test" ./pkg/gpu || exit 1
	go test -c -tags cuda -o "$arg/gpumodel.test" ./pkg/gpu/gpumodel || exit 1
	go test -c -tags cuda -o "$arg/train.test" ./pkg/train || exit 1
	echo "run it on the GPU host: scripts/cuda/gpu-check.sh --prebuilt $arg/cuda.test"
	exit 0
	;;
prebuilt)
	device_info
	run_tests "$arg"
	;;
build)
	device_info
	setup_cgo
	step "go vet -tags cuda ./pkg/gpu/..."
	go vet -tags cuda ./pkg/gpu/... || failed+=("vet")
	step "go build -tags cuda ./pkg/gpu/..."
	if ! go build -tags cuda ./pkg/gpu/...; then
		echo "gpu-check.sh: the CUDA backend does not build" >&2
		exit 1
	fi
	run_tests ""
	step "go build -tags cuda ./... (the whole repository)"
	go build -tags cuda ./... || failed+=("go build -tags cuda ./...")
	if [ ${#short[@]} -eq 0 ]; then
		step "benchmarks (scripts/cuda/bench.sh bin/cuda)"
		mkdir -p bin/cuda
		if go build -tags cuda -o bin/cuda/ ./cmd/sample ./cmd/train ./cmd/rank ./cmd/metrics &&
			go test -c -tags cuda -o bin/cuda/cuda.test ./pkg/gpu; then
			scripts/cuda/bench.sh bin/cuda || failed+=("benchmarks")
		else
			failed+=("building the benchmark binaries")
		fi
	fi
	;;
esac

echo
if [ ${#failed[@]} -eq 0 ]; then
	echo "gpu-check: all passed"
	exit 0
fi
echo "gpu-check: FAILED: ${failed[*]}"
exit 1
