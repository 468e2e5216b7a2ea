# Top-level entry points. The pipeline itself (dataset -> queries -> models -> cones ->
# ranks -> metrics) is the Makefile DAG in pipelines/, run from the repository root.

STAGES  := sample
BINS    := $(addprefix bin/,$(STAGES))

.PHONY: all build test test-go test-js demo bench clean

all: build

build: $(BINS)

include pipelines/build.mk

# The whole test suite: Go (vet, unit and integration tests) and the check that a queries
# file written here reads in JavaScript with apache-arrow (skipped when node is absent).
test: test-go test-js

test-go:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

test-js:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		npm ci --prefix scripts/arrow-check --no-audit --no-fund --loglevel=error && \
		ARROW_CHECK_JS=1 $(GO) test -count=1 -run TestArrowJS ./pkg/artifact/ -v | grep -E '^(---|ok|FAIL|PASS)'; \
	else \
		echo "test-js: node/npm not found; skipping the apache-arrow check"; \
	fi

# The demo: sample the shipped FB15k-237 (three splits at BetaE's counts) and print the
# per-type table of query counts and mean easy/hard answers.
demo: build
	$(MAKE) -f pipelines/Makefile queries stats

# Benchmarks: sampling all three FB15k-237 splits at full BetaE counts (wall time and
# peak RSS per split), then the Go micro-benchmarks.
bench: build
	@mkdir -p out/bench
	@for split in train valid test; do \
		$(GO) run ./scripts/measure -label "sample $$split" -- \
			bin/sample generate --data data/fb15k-237 --split $$split -q -o out/bench/$$split-queries.arrow || exit 1; \
	done
	$(GO) test -run '^$$' -bench . -benchtime 3x ./pkg/sample/ ./pkg/answer/

clean:
	rm -rf bin out
