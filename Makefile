# rdmatrace. `make demo` boots a guest with soft-RoCE and shows rdmatrace's
# view of an rping pair; `make test` runs every test, guest tests included.

GO       ?= go
# Debian's kernels: bullseye's 5.10, bookworm's 6.1 and 6.12, and sid's,
# Debian's newest (docs/kernels.md).
KERNELS  ?= 5.10 6.1 6.12 sid
# capture and bench need the live tracer: 5.10 has no module BTF for it.
TRACE_KERNELS ?= 6.1 6.12
# Kernels that run every guest test. The others run all but rdmabench's
# guest tests (against cmtime, bad input, the outliers' causes) and
# Prometheus' scrape, whose kernel side other tests cover on each kernel
# (e2e/main_test.go: needFullTier). Measurements run under make bench only.
E2E_FULL_KERNELS ?= $(TRACE_KERNELS)
# Kernels whose guest runs both vCPUs on one host thread (guest/run,
# RDMATRACE_GUEST_TCG=single): sid's kernel died of a half-patched
# instruction (Oops: int3 in __schedule) in 2 of 3 boots under
# multi-threaded TCG. Single-threaded it cannot, and its tests take 1.1 to
# 2.7 times as long (TestWithRunningWorkloads 163 s, 60 multi-threaded); no
# timing test runs there.
E2E_TCG_SINGLE ?= sid
BIN      := bin/rdmatrace
E2E_BIN  := bin/e2e.test
# make fuzz: every target for FUZZTIME inputs; make test runs a smoke of
# FUZZSMOKE inputs a target (the corpora's regressions run in unit too).
FUZZTIME ?= 100000x
FUZZSMOKE ?= 10000x
# Minimizing a new input runs it up to 60 s by default: the log and recording
# readers spent their whole budget on it (11 and 91 inputs in 30 s).
FUZZMINTIME ?= 1000x
# E2E_RUN selects guest tests by name (go test -run syntax).
E2E_RUN  ?= .
# Our own C workloads (guest/workloads): a churn for make bench, a program
# that leaks a QP for the leak tests.
WORKLOADS := out/churn out/leakqp out/noise

.PHONY: all build arm64 check unit fuzz fuzz-smoke e2e e2e-landing test capture generate bench demo clean man install image

all: build

# No symbol tables and no urfave/cli doc generator: a smaller binary starts
# measurably faster, which matters under the guest's emulated CPU.
# VERSION is stamped into rdmatrace (--version); without git, `go build`'s
# own record of the revision is the fallback (cmd/rdmatrace/version.go).
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null)
GOBUILD := CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w $(if $(VERSION),-X main.version=$(VERSION))' -tags urfave_cli_no_docs

# rdmabench's timing loops are C against rdma-core's headers (internal/rdmabench/verbs), so
# it is built with cgo and links libibverbs and librdmacm; rdmatrace stays
# a static CGO_ENABLED=0 binary, checked here after every build.
BENCH_BIN := bin/rdmabench

build:
	$(GOBUILD) -o $(BIN) ./cmd/rdmatrace
	@if readelf -lW $(BIN) | grep -q 'program interpreter'; then \
	  echo "$(BIN) is dynamically linked: it must stay static (CGO_ENABLED=0)" >&2; exit 1; fi
	guest/setup-host.sh
	CGO_ENABLED=1 $(GO) build -trimpath -ldflags='-s -w' -tags urfave_cli_no_docs -o $(BENCH_BIN) ./cmd/rdmabench

# rdmatrace for arm64 hosts (BlueField DPUs, Grace): the same static
# binary with the arm64 BPF object, which bpf2go builds next to amd64's.
arm64:
	GOARCH=arm64 $(GOBUILD) -o $(BIN)-arm64 ./cmd/rdmatrace

# rdmatrace(8), from the same command definitions as --help, by a build
# with urfave/cli's doc generator (the installed binary has none).
MAN := bin/rdmatrace.8
man:
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) run ./cmd/rdmatrace generate-man > $(MAN).tmp && mv $(MAN).tmp $(MAN)

# Installs rdmatrace (a static binary: no dependency), its man page and its
# shell completions under DESTDIR/PREFIX.
PREFIX  ?= /usr/local
DESTDIR ?=
install: man
	$(GOBUILD) -o $(BIN) ./cmd/rdmatrace
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/sbin/rdmatrace
	install -D -m 0644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man8/rdmatrace.8
	@mkdir -p $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(BIN) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/rdmatrace
	$(BIN) completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_rdmatrace
	$(BIN) completion fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/rdmatrace.fish

# The gates before any test: gofmt, vet (the e2e tests too), and the
# committed BPF output being what make generate gives
# (bpf/check-generate.sh, from the committed BTF: no guest); rdmatrace
# builds for arm64 too (BlueField, Grace). vet compiles internal/rdmabench/verbs, which needs
# gcc and rdma-core's headers (guest/setup-host.sh).
check: bpf-tools arm64
	guest/setup-host.sh
	@unformatted=$$($$($(GO) env GOROOT)/bin/gofmt -l .); if [ -n "$$unformatted" ]; then \
	  echo "gofmt -l: these files are not formatted:" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e
	GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./cmd/rdmatrace ./tracer ./bpf/...
	bpf/check-generate.sh

unit: check
	@echo "== unit tests, $$(date -u +%T)"
	$(GO) test -count=1 ./...

# Every fuzz target for a number of inputs (a count, not a time: with a
# short -fuzztime in seconds, go test can fail with "context deadline
# exceeded" when the time runs out mid-input), each new input minimized
# for at most FUZZMINTIME runs; longer: make fuzz FUZZTIME=5m.
fuzz:
	@echo "== fuzz, $$(date -u +%T)"
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) $$pkg; \
	  done; \
	done

$(E2E_BIN): build $(WORKLOADS)
	CGO_ENABLED=0 $(GO) test -c -tags e2e -o $(E2E_BIN) ./e2e

# The end-to-end tests run inside a qemu guest on each kernel in KERNELS.
# One kernel, one test: make e2e KERNELS=6.12 E2E_RUN=TestWithRunningWorkloads
# A guest may run 25 minutes: 6.12's full tier took 14 of 15 here, and the
# landing CI's machine ran 1.4 times slower.
e2e: $(E2E_BIN)
	@set -e; for k in $(KERNELS); do \
	  case " $(E2E_FULL_KERNELS) " in *" $$k "*) full=1;; *) full=0;; esac; \
	  case " $(E2E_TCG_SINGLE) " in *" $$k "*) tcg=single;; *) tcg=multi;; esac; \
	  echo "== e2e on Debian $$k (full tier: $$full, TCG $$tcg-threaded), $$(date -u +%T)"; \
	  guest/kmod.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  guest/siw.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  guest/modbtf.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  RDMATRACE_E2E_FULL=$$full RDMATRACE_GUEST_TCG=$${RDMATRACE_GUEST_TCG:-$$tcg} RDMATRACE_GUEST_SILENCE=300 guest/run -k $$k -t 1500 -o out/e2e-$$k -- $(E2E_BIN) -test.v -test.run '$(E2E_RUN)' -rdmatrace $(BIN); \
	  echo "== e2e on Debian $$k done, $$(date -u +%T)"; \
	done

fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZSMOKE)

# The landing path's guests: the full-tier kernels one after the other
# (their timing tests want the machine to themselves), then the
# compatibility-tier kernels of E2E_BESIDE side by side: their tests wait
# on the kernel (timeouts, fallbacks, scrapes) more than they compute, and
# none is timed. Their output follows once both are done.
E2E_BESIDE ?= 5.10 sid
e2e-landing: $(E2E_BIN)
	@set -e; for k in $(KERNELS); do \
	  guest/kmod.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  guest/siw.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  guest/modbtf.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	done
	@$(MAKE) --no-print-directory -o $(E2E_BIN) e2e KERNELS="$(filter-out $(E2E_BESIDE),$(KERNELS))"
	@set -e; beside="$(filter $(E2E_BESIDE),$(KERNELS))"; \
	echo "== e2e side by side on Debian $$beside, $$(date -u +%T)"; \
	for k in $$beside; do \
	  ( $(MAKE) --no-print-directory -o $(E2E_BIN) e2e KERNELS=$$k >out/e2e-$$k.log 2>&1; echo $$? >out/e2e-$$k.rc ) & \
	done; wait; \
	rc=0; for k in $$beside; do cat out/e2e-$$k.log; [ "$$(cat out/e2e-$$k.rc)" = 0 ] || { echo "== e2e on Debian $$k failed" >&2; rc=1; }; done; \
	echo "== e2e side by side done, $$(date -u +%T)"; exit $$rc

test: unit fuzz-smoke e2e-landing

# Re-record the netlink replies and iproute2's output that the replay unit
# tests use (testdata/netlink/KERNEL), from a guest running real workloads.
capture: $(E2E_BIN)
	@set -e; for k in $(TRACE_KERNELS); do \
	  guest/run -k $$k -t 600 -o out/capture-$$k -- $(E2E_BIN) -test.run TestWithRunningWorkloads/ResMatchesIproute2 -rdmatrace $(BIN); \
	  rm -rf testdata/netlink/$$k && mkdir -p testdata/netlink/$$k; \
	  cp -r out/capture-$$k/netlink out/capture-$$k/rdma out/capture-$$k/comm.json testdata/netlink/$$k/; \
	done

-include bpf/bpf.mk

# Regenerates vmlinux.h (from the guest's BTF) and the bpf2go output; the
# result must equal what is committed.
generate: bpf-generate

# The workloads link the host's libibverbs, which the guest shares through
# its 9p root.
out/%: guest/workloads/%.c
	guest/setup-host.sh
	mkdir -p out && gcc -O2 -Wall -o $@ $< -libverbs

# Measurements: Go benchmarks, then in the guest the netlink and tracer
# scripts and the e2e measurements (RDMATRACE_E2E_BENCH=1: the tracer's
# cost on rdmabench, rdmabench lat against perftest, reg_mr against size),
# which the landing path (make test) skips.
bench: build $(WORKLOADS) $(E2E_BIN)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	@set -e; for k in $(TRACE_KERNELS); do \
	  guest/run -k $$k -t 1200 -o out/bench-res-$$k -- guest/bench-res.sh $(BIN); \
	  guest/run -k $$k -t 1200 -o out/bench-trace-$$k -- guest/bench-trace.sh $(BIN) out/churn; \
	  RDMATRACE_E2E_BENCH=1 guest/run -k $$k -t 1200 -o out/bench-e2e-$$k -- $(E2E_BIN) -test.v -test.run 'TestBenchTracerCost|TestBenchLatMatchesPerftest|TestBenchCtrlRegistrationGrowsWithSize' -rdmatrace $(BIN); \
	done

# The container image of deploy/container (buildah, as Debian packages it;
# vfs storage and chroot isolation work without a daemon or privileges).
image: build
	buildah --storage-driver vfs bud --isolation chroot -f deploy/container/Containerfile -t rdmatrace:$(VERSION) .

demo: build
	guest/run -k 6.1 -t 600 -o out/demo -- guest/demo.sh $(BIN)

clean:
	rm -rf bin out
