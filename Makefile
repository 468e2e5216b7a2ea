# Top-level entry points. The pipeline itself (dataset -> queries -> models -> cones ->
# ranks -> metrics) is the Makefile DAG in pipelines/, run from the repository root.

STAGES  := sample train embed rank metrics
BINS    := $(addprefix bin/,$(STAGES))

.PHONY: all build build-cuda test test-go test-race check-cgo check-cuda-h test-js test-cuda lint demo bench gpu-check fuzz parity clean

all: build

build: $(BINS)

# Binaries with the CUDA backend (needs cuda.h and libcuda: scripts/cuda/install-deps.sh).
# gorgonia.org/cu ends the process at start-up on a machine without a usable GPU, so
# these binaries run on GPU hosts only.
build-cuda: check-cuda-h
	@mkdir -p bin/cuda
	$(GO) build -buildvcs=auto -tags cuda -o bin/cuda/ $(addprefix ./cmd/,$(STAGES))

# The whole test suite: Go (gofmt, vet, vet again for arm64: the Go loops that stand in
# for the assembly elsewhere and every build without cgo, which a cross build turns off;
# unit, integration and the CUDA kernels under the launch emulator) and the checks that a queries file written here reads in JavaScript with
# apache-arrow and that `embed export`'s Parquet files read with hyparquet (skipped when
# node is absent).
test: test-go test-js

test-go: check-cgo
	@unformatted=$$("$$($(GO) env GOROOT)/bin/gofmt" -l .); if [ -n "$$unformatted" ]; then \
		echo "make test: not gofmt-formatted (run gofmt -w on them):" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...
	$(GO) test -count=1 ./...

# The whole Go suite under the race detector: the packages' tests, and the end-to-end tests
# with stages built with -race too (internal/stagebuild), so the stages' own goroutines are
# checked where they really run. halt_on_error: a race ends the process with status 66, so
# no test can pass over one. Slower than test-go (about 4x: 9.5 minutes on 2 cores, the tour's
# race-built stages 5 of them), so the packages get 30 minutes each where go test's default
# is 10; .ci/run runs it after `make test`.
test-race: check-cgo
	GORACE=halt_on_error=1 $(GO) test -race -count=1 -timeout 30m ./...

# The CUDA kernels are tested under the launch emulator, C++ built through cgo. Without a C
# compiler Go turns cgo off and those tests drop out of `go test` (each such package then
# fails a TestEmulatorNeedsCgo, emu.NoCgoHelp); refuse here first, saying what to install.
check-cgo:
	@if [ "$$($(GO) env CGO_ENABLED)" != 1 ] || ! command -v "$$(set -- $$($(GO) env CXX); echo "$$1")" >/dev/null 2>&1; then \
		echo "make test: the CUDA kernels' tests run under the launch emulator, which needs cgo and a C++ compiler;" >&2; \
		echo "  here CGO_ENABLED=$$($(GO) env CGO_ENABLED) and CXX=$$($(GO) env CXX) ($$(command -v "$$(set -- $$($(GO) env CXX); echo "$$1")" || echo not found))." >&2; \
		echo "  Install one (Debian/Ubuntu: apt-get install g++) and run with cgo on (CGO_ENABLED=1)." >&2; \
		exit 1; \
	fi

# The cuda-tagged build compiles gorgonia.org/cu against cuda.h: without it cgo's error
# ("cuda.h: No such file or directory") says nothing of what to install; this does.
check-cuda-h:
	@if ! printf '#include <cuda.h>\n' | $$($(GO) env CC) -E -x c - >/dev/null 2>&1; then \
		echo "the cuda-tagged build needs cuda.h (and the libcuda link stub), not found here:" >&2; \
		echo "  run scripts/cuda/install-deps.sh (as root; Debian's nvidia-cuda-dev), then again." >&2; \
		exit 1; \
	fi

test-js:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		npm ci --prefix scripts/arrow-check --no-audit --no-fund --loglevel=error && \
		out=$$(ARROW_CHECK_JS=1 $(GO) test -count=1 -run 'TestArrowJS|TestParquetReadByHyparquet' ./pkg/artifact/ ./pkg/export/ -v 2>&1); rc=$$?; \
		printf '%s\n' "$$out" | grep -E '^(---|ok|FAIL|PASS|    )'; exit $$rc; \
	else \
		echo "test-js: node/npm not found; skipping the apache-arrow check"; \
	fi

# go.mod and go.sum tidy; then staticcheck with every check (-checks all) over every
# package, the cuda-tagged build's too (which needs cuda.h), at a pinned version: go run
# fetches it through the module proxy, and nothing is added to go.mod. .ci/run runs it
# after installing the CUDA headers. A deliberate exception is a //lint:ignore CHECK
# reason comment on its line.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
.PHONY: lint-go
lint-go:
	@$(GO) mod tidy -diff >/dev/null || { echo "make lint-go: go.mod or go.sum is not tidy; run go mod tidy (go mod tidy -diff shows what it changes)" >&2; exit 1; }
	$(GO) run $(STATICCHECK) -checks all ./...
	$(GO) run $(STATICCHECK) -checks all -tags cuda ./...

# Both linters (lint-go above, lint-sh further down); .ci/run runs each where its needs are
# installed.
lint: lint-go lint-sh

# The cuda-tagged build compiles and vets (needs the CUDA headers).
test-cuda: check-cuda-h
	$(GO) build -tags cuda ./...
	$(GO) vet -tags cuda ./...

# The demo: the whole pipeline on the shipped FB15k-237 on the CPU, in about 4 minutes on
# 2 cores: BetaE's train queries, smaller valid/test sets, a RoConE model (d=200, 2,000
# steps of small batches, b=128 and n=32, at a raised learning rate with γ=2, λ=1: in so
# short a run these learn far faster than the paper's b=512, n=128, γ=30, λ=0.1; see the
# README's "The demo"), cones, ranks, and the per-type table beside the published RoConE
# and ConE rows.
DEMO_EVAL := 2p=500,3p=500,2i=500,3i=500,ip=500,pi=500,2u=500,up=500,2in=500,3in=500,inp=500,pin=500,pni=500
DEMO = $(MAKE) --no-print-directory -f pipelines/Makefile OUT=out/demo MODEL=rocone SEEDS=0 \
	VALID_FLAGS='--count 1p=500,$(subst 500,200,$(DEMO_EVAL))' TEST_FLAGS='--count 1p=2000,$(DEMO_EVAL)' \
	TRAIN_FLAGS='--dim 200 --batch 128 --negatives 32 --steps 2000 --eval-every 500 --lr 0.001 --gamma 2 --lambda 1 --checkpoint-every 500'
demo: build
	$(DEMO) table

# Benchmarks: sampling all three FB15k-237 splits at full BetaE counts (wall time and
# peak RSS per split), training steps/s and rank throughput, then the Go micro-benchmarks.
bench: build
	@mkdir -p out/bench
	@for split in train valid test; do \
		$(GO) run ./scripts/measure -label "sample $$split" -- \
			bin/sample generate --data data/fb15k-237 --split $$split -q -o out/bench/$$split-queries.arrow || exit 1; \
	done
	scripts/bench-train.sh
	$(GO) test -run '^$$' -bench 'BenchmarkLinear|BenchmarkDistanceTrain|BenchmarkEval' -benchtime 2x ./pkg/compute/cpu/

# Scaling: synthetic KGs (sample synth) of 15k, 150k and 1.5M entities; per stage the time
# per unit of work (sampled queries/s, s per training update with dense and sparse Adam,
# ranked queries/s) and peak memory, as a table (scripts/bench-scale.sh; SIZES to choose).
.PHONY: bench-scale
bench-scale: build
	scripts/bench-scale.sh

# The equal-budget learning check against QE-ConE (issue 11): scripts/reference/parity.sh.
parity: build
	scripts/reference/parity.sh

# On a GPU host, the whole of the GPU acceptance in one command: parity of every kernel on
# the device, device errors, the device update and ranks against the CPU model, 200 training
# steps against the CPU loss curve, kernel timings, then the training and rank benchmarks.
gpu-check:
	scripts/cuda/gpu-check.sh

# The pipeline on a real Slurm: a private single-node cluster (slurm-wlm and munge installed
# when missing; root or sudo) in a temporary folder, the whole pipelines/slurm/ DAG on
# testdata/tiny with 2 seeds, caching, a failing stage, and the metrics against the Makefile
# pipeline's; the daemons it started are stopped at the end, also on failure.
.PHONY: test-slurm
test-slurm:
	scripts/slurm/test.sh

# shellcheck over every shell script git tracks: the *.sh and *.bash files (scripts/cuda/
# steady.sh is sourced and has no #! line) and every file whose #! line runs sh, bash, dash
# or ksh, directly or through env (scripts/commit-id, .ci/run), so a new script is checked
# without being listed here. -x follows what they source, from the repository root. Not
# part of `make test`: the README's set-up does not install shellcheck.
.PHONY: lint-sh
lint-sh:
	@command -v shellcheck >/dev/null 2>&1 || { \
		echo "make lint-sh: shellcheck not found; install it (Debian/Ubuntu: apt-get install shellcheck) and run again." >&2; exit 1; }
	@scripts=$$( { git -c core.quotePath=false ls-files -- '*.sh' '*.bash'; \
		git -c core.quotePath=false grep -lI -e '^#!' | while IFS= read -r f; do \
			head -n 1 -- "$$f" | grep -Eq '^#!.*[/[:space:]](ba|da|k)?sh([[:space:]]|$$)' && echo "$$f"; \
		done; } | sort -u); \
	if [ -z "$$scripts" ]; then echo "make lint-sh: no shell scripts found (not a git checkout?)" >&2; exit 1; fi; \
	printf '%s\n' "$$scripts" | tr '\n' '\0' | xargs -0 shellcheck -x -- && \
	echo "lint-sh: shellcheck finds nothing in $$(printf '%s\n' "$$scripts" | wc -l) shell scripts"

# Fuzzing: every Fuzz target in turn for FUZZTIME each (go fuzzes one target per
# invocation), FUZZPAR workers (the default 1 suits a small shared machine). Crashers go to
# the package's testdata/fuzz/, which `make test` then runs as ordinary test cases.
FUZZTIME ?= 60s
FUZZPAR  ?= 1
# Minimizing each new interesting input runs the target up to FUZZMINTIME (runs or time);
# for the artifact readers (kilobyte inputs, milliseconds a run) go's default of 60s would
# take most of a short run.
FUZZMINTIME ?= 50x
FUZZ_TARGETS := ./pkg/query:FuzzParse ./pkg/query:FuzzParseGrounded ./pkg/query:FuzzParseAsk \
	./pkg/sample:FuzzParseCounts ./pkg/sample:FuzzBetaEPickle ./pkg/picklescan:FuzzScan \
	./pkg/kg:FuzzLoadIDs ./pkg/kg:FuzzLoadNames ./pkg/kg:FuzzLoadAuto \
	./pkg/artifact:FuzzQueries ./pkg/artifact:FuzzCheckpoint ./pkg/artifact:FuzzCones \
	./pkg/artifact:FuzzRanks ./pkg/artifact:FuzzTrainLog ./pkg/artifact:FuzzMetrics ./pkg/artifact:FuzzAnswers \
	./pkg/artifact:FuzzChangedByte ./pkg/artifact:FuzzTrailer ./pkg/artifact:FuzzQueryRows \
	./pkg/artifact:FuzzRankRows ./pkg/artifact:FuzzConeRows ./pkg/kg:FuzzKGDigest \
	./cmd/train:FuzzConfigYAML ./cmd/train:FuzzConfigTOML \
	./pkg/qecone:FuzzImport ./pkg/shard:FuzzParse ./pkg/shard:FuzzParseSpan ./pkg/cliargs:FuzzCheck \
	./pkg/pipeline:FuzzRunRecord ./pkg/gpu:FuzzParseReverts ./pkg/model/internal/vmath:FuzzTanh \
	./pkg/train:FuzzSameTrajectory
# Go 1.26's fuzz coordinator can end a duration-limited run with a bare "context deadline
# exceeded" and no failing input, a race at the deadline fixed in Go 1.27
# (golang/go#75804); such a run is reported and not counted as a finding. A run that
# wrote a failing input, or failed any other way, stops make fuzz.
fuzz:
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzz: $$name in $$pkg for $(FUZZTIME)"; \
		if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel $(FUZZPAR) $$pkg >$$log 2>&1; then \
			grep -v '^fuzz: elapsed' $$log | tail -n 1; grep '^fuzz: elapsed' $$log | tail -n 1; \
		elif grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
			grep '^fuzz: elapsed' $$log | tail -n 1; \
			echo "fuzz: $$name: go's coordinator ended the run with 'context deadline exceeded' and no failing input (golang/go#75804, fixed in Go 1.27): not a finding"; \
		else \
			cat $$log; exit 1; \
		fi; \
	done

clean:
	rm -rf bin out

include pipelines/build.mk
