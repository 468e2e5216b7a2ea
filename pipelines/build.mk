# Building the stage binaries, shared by the top-level Makefile and the pipeline DAG.
# A binary is rebuilt only when a Go source changes, so Make's timestamps downstream stay
# meaningful (go build rewrites its output every time it runs).
GO      ?= go
GO_SRC  := $(shell find cmd pkg -name '*.go' -not -name '*_test.go') go.mod go.sum

# -buildvcs=auto: the commit goes into the binary (STAGE --version) when this is a git
# checkout, whatever GOFLAGS says.
bin/%: $(GO_SRC)
	@mkdir -p bin
	$(GO) build -buildvcs=auto -o $@ ./cmd/$*
