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
# that leaks a QP for the leak tests, a QP pair with the transport settings
# a test gives (qpattr), a program leaking from three call sites (leaksites),
# one holding thousands of PDs and CQs (pdhog), one asking a device for what
# it refuses (verbsfail).
WORKLOADS := out/churn out/leakqp out/noise out/qpattr out/leaksites out/pdhog out/verbsfail

.PHONY: all build rdmatrace rdmabench man-rdmabench install-rdmabench release release-check package-smoke test-tools arm64 check unit fuzz fuzz-smoke e2e e2e-landing e2e-twohost vlogs guest-prepare test capture generate bench demo docs-capture docs-peer docs-pictures clean man install image

all: build

# The version. VERSION holds the release's number (X.Y.Z). A commit
# tagged vX.Y.Z is that release when the tag and VERSION agree (make
# release stops when they do not); any other commit builds as
# X.Y.Z-dev+gCOMMIT, with ".dirty" for uncommitted changes, so that a
# binary says what it was built from. Without git (a source archive), the
# version is VERSION's. `go build` without make: cmd/rdmatrace/version.go.
RELEASE    := $(shell cat VERSION)
GIT_TAG    := $(shell git describe --tags --exact-match --match 'v[0-9]*.[0-9]*.[0-9]*' 2>/dev/null)
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
GIT_DIRTY  := $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo .dirty)
ifeq ($(GIT_TAG),v$(RELEASE))
VERSION ?= $(RELEASE)
else ifneq ($(GIT_COMMIT),)
VERSION ?= $(RELEASE)-dev+g$(GIT_COMMIT)$(GIT_DIRTY)
else
VERSION ?= $(RELEASE)
endif
# Reproducible builds: every time stamped into an archive, a package or
# an image is the last commit's.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
export SOURCE_DATE_EPOCH

# No symbol tables and no urfave/cli doc generator: a smaller binary starts
# measurably faster, which matters under the guest's emulated CPU. No
# build ID and no paths of this machine: the same commit builds the same
# bytes (make release-check).
LDFLAGS := -s -w -buildid= -X main.version=$(VERSION)
GOBUILD := CGO_ENABLED=0 $(GO) build -trimpath -ldflags='$(LDFLAGS)' -tags urfave_cli_no_docs

# rdmabench's timing loops are C against rdma-core's headers (internal/rdmabench/verbs), so
# it is built with cgo and links libibverbs and librdmacm; rdmatrace stays
# a static CGO_ENABLED=0 binary, checked here after every build.
BENCH_BIN := bin/rdmabench

# Builds, and installs nothing: the guest's packages come with the guest
# targets (guest/setup-host.sh).
build: rdmatrace rdmabench

rdmatrace:
	$(GOBUILD) -o $(BIN) ./cmd/rdmatrace
	@if readelf -lW $(BIN) | grep -q 'program interpreter'; then \
	  echo "$(BIN) is dynamically linked: it must stay static (CGO_ENABLED=0)" >&2; exit 1; fi

rdmabench:
	@printf '#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\nint main(void){return 0;}\n' | \
	  $(CC) -x c -o /dev/null - -libverbs -lrdmacm >/dev/null 2>&1 || { \
	  echo "$(BENCH_BIN) needs a C compiler and rdma-core's libibverbs and librdmacm with their headers:" >&2; \
	  echo "  Debian, Ubuntu:  apt-get install gcc libibverbs-dev librdmacm-dev" >&2; \
	  echo "  RHEL, Rocky:     dnf install gcc rdma-core-devel" >&2; \
	  echo "  SLES:            zypper install gcc rdma-core-devel" >&2; \
	  echo "(make rdmatrace builds rdmatrace alone, which needs none of them)" >&2; exit 1; }
	CGO_ENABLED=1 $(GO) build -trimpath -ldflags='$(LDFLAGS)' -tags urfave_cli_no_docs -o $(BENCH_BIN) ./cmd/rdmabench

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

# rdmabench(1), the same way; its build needs rdma-core's headers (cgo).
BENCH_MAN := bin/rdmabench.1
man-rdmabench: rdmabench
	CGO_ENABLED=1 $(GO) run ./cmd/rdmabench generate-man > $(BENCH_MAN).tmp && mv $(BENCH_MAN).tmp $(BENCH_MAN)

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

# rdmabench and rdmabench(1): a cgo binary linking libibverbs and librdmacm.
install-rdmabench: man-rdmabench
	install -D -m 0755 $(BENCH_BIN) $(DESTDIR)$(PREFIX)/bin/rdmabench
	install -D -m 0644 $(BENCH_MAN) $(DESTDIR)$(PREFIX)/share/man/man1/rdmabench.1

# The gates before any test: gofmt, vet (the e2e tests too), and the
# committed BPF output being what make generate gives
# (bpf/check-generate.sh, from the committed BTF: no guest); rdmatrace
# builds for arm64 too (BlueField, Grace). vet compiles internal/rdmabench/verbs, which needs
# gcc and rdma-core's headers (guest/setup-host.sh).
check: bpf-tools test-tools arm64
	@unformatted=$$($$($(GO) env GOROOT)/bin/gofmt -l .); if [ -n "$$unformatted" ]; then \
	  echo "gofmt -l: these files are not formatted:" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e
	cd deploy/container && $(GO) vet ./...
	GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./cmd/rdmatrace ./tracer ./bpf/...
	bpf/check-generate.sh
	GO=$(GO) deploy/validate/run.sh

unit: check
	@echo "== unit tests, $$(date -u +%T)"
	$(GO) test -count=1 ./...
	cd deploy/container && $(GO) test -count=1 ./...

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

# What the tests need on the host (and so in the guest, whose root is the
# host's): perftest, prometheus, the shells, gcc and rdma-core's headers.
test-tools:
	guest/setup-host.sh test

$(E2E_BIN): build $(WORKLOADS) | test-tools
	CGO_ENABLED=0 $(GO) test -c -tags e2e -o $(E2E_BIN) ./e2e

# The end-to-end tests run inside a qemu guest on each kernel in KERNELS.
# One kernel, one test: make e2e KERNELS=6.12 E2E_RUN=TestWithRunningWorkloads
# E2E_RERUN=1 (the landing path's) runs the tests that failed once more
# and names those that pass then as flaky (guest/e2e-tests.sh).
# A guest may run 45 minutes: 6.12's full tier took 12 here alone and 20
# beside another guest and builds, and a landing CI's machine ran 1.4
# times slower.
e2e: $(E2E_BIN)
	@set -e; for k in $(KERNELS); do \
	  case " $(E2E_FULL_KERNELS) " in *" $$k "*) full=1;; *) full=0;; esac; \
	  case " $(E2E_TCG_SINGLE) " in *" $$k "*) tcg=single;; *) tcg=multi;; esac; \
	  echo "== e2e on Debian $$k (full tier: $$full, TCG $$tcg-threaded), $$(date -u +%T)"; \
	  guest/kmod.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  guest/siw.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  guest/modbtf.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  rm -f out/e2e-$$k/digest.txt; \
	  here=""; elsewhere=""; for p in $(E2E_SPREAD); do \
	    if [ "$${p#*=}" = "$$k" ]; then here="$$here|$${p%%=*}"; else elsewhere="$$elsewhere|$${p%%=*}"; fi; \
	  done; \
	  RDMATRACE_E2E_HERE="$${here#|}" RDMATRACE_E2E_ELSEWHERE="$${elsewhere#|}" \
	  RDMATRACE_E2E_FULL=$$full RDMATRACE_E2E_RERUN=$(E2E_RERUN) RDMATRACE_GUEST_TCG=$${RDMATRACE_GUEST_TCG:-$$tcg} RDMATRACE_GUEST_SILENCE=300 guest/run -k $$k -t 2700 -o out/e2e-$$k -- guest/e2e-tests.sh $(E2E_BIN) -test.v -test.run '$(E2E_RUN)' -rdmatrace $(BIN); \
	  echo "== e2e on Debian $$k done, $$(date -u +%T)"; \
	done

# VictoriaLogs, the log store of the two-host test, built once from its
# pinned module version into the guests' cache (guest/vlogs.sh).
vlogs:
	@guest/vlogs.sh >/dev/null

# Two guests on one link (guest/pair), one vCPU each, on TWOHOST_KERNEL:
# a traces and b runs the exporter, with --otlp --node, into a VictoriaLogs
# in guest a; rping and ib_write_bw pairs connect a to b; `rdmatrace peer`
# on a names b's QPs' owners as b's `rdma res` does, `peer --at` the rping
# server b killed, with its fate, why --store the killed ib_write_bw
# server as the peer of a's failed client, and peer both lifetimes of a
# QPN that came back (e2e/twohost_test.go). Each guest runs the test
# through guest/e2e-tests.sh (its tally and digest in OUTDIR/a and b);
# with E2E_RERUN=1 a failed pair runs once more, and one that then passes
# is named flaky. out/e2e-twohost/digest.txt says what failed, the last
# line is the pair's tally.
TWOHOST_KERNEL ?= 6.12
e2e-twohost: $(E2E_BIN) vlogs
	@set -e; vl=$$(guest/vlogs.sh); o=out/e2e-twohost; \
	test="RDMATRACE_E2E_RERUN=0 guest/e2e-tests.sh $(E2E_BIN) -test.v -test.run '^TestTwoHosts$$' -rdmatrace $(BIN) -vlogs $$vl"; \
	said() { for g in a b; do [ ! -s $$o/$$g/digest.txt ] || sed "s/^/  [$$g] /" $$o/$$g/digest.txt; done; }; \
	rm -f $$o/digest.txt $$o/a/digest.txt $$o/b/digest.txt; first=""; \
	for try in 1 2; do \
	  echo "== e2e on two guests of Debian $(TWOHOST_KERNEL), $$(date -u +%T)"; \
	  rc=0; guest/pair -k $(TWOHOST_KERNEL) -t 900 -o $$o -a "$$test" -b "$$test" || rc=$$?; \
	  echo "== e2e on two guests done (exit $$rc), $$(date -u +%T)"; \
	  if [ $$rc != 0 ] && [ "$(E2E_RERUN)" = 1 ] && [ $$try = 1 ]; then \
	    first=$$(said); [ -n "$$first" ] || first="  the pair exited $$rc before its tests ended"; \
	    rm -f $$o/a/digest.txt $$o/b/digest.txt; echo "== e2e: TestTwoHosts failed; running the pair once more"; continue; \
	  fi; break; \
	done; \
	if [ $$rc = 0 ] && [ -n "$$first" ]; then \
	  { echo "flaky: TestTwoHosts failed, then passed when run again; the first time it said:"; echo "$$first"; } >$$o/digest.txt; \
	  echo "== e2e tally: 1 passed, 0 failed, 0 skipped, 1 flaky"; \
	elif [ $$rc = 0 ]; then echo "== e2e tally: 1 passed, 0 failed, 0 skipped, 0 flaky"; \
	else \
	  { echo "failed$${first:+ twice}: TestTwoHosts$${first:+; the first time it said:}"; [ -z "$$first" ] || { echo "$$first"; echo "  and the second time:"; }; \
	    s=$$(said); echo "$${s:-  the pair exited $$rc before its tests ended}"; } >$$o/digest.txt; \
	  echo "== e2e tally: 0 passed, 1 failed, 0 skipped, 0 flaky"; exit $$rc; \
	fi

# The smoke does not minimize what it finds new (FUZZMINTIME=0x): its inputs
# are not kept in CI, and minimizing large ones was half its time (the BTF
# loader's: 57 s for 10 000 inputs, 20 s without).
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZSMOKE) FUZZMINTIME=0x

# The landing path's guests run in lanes side by side; a lane's kernels
# one after the other. Under the emulator a guest waits on its kernel
# (grace periods, timeouts, scrapes) about as much as it computes, so three
# lanes on two cores take about half the time of one after another (the
# full tiers of 6.1 and 6.12: 24 minutes in turn, 20 side by side on a
# machine busy with builds as well). sid's guest runs on one host thread
# (E2E_TCG_SINGLE) and 5.10's runs the fewest tests (no module BTF): each
# has a lane, so that no lane waits on another kernel's. Each kernel's
# output is printed as it ends. A kernel of KERNELS in no lane gets a
# lane of its own.
E2E_LANES ?= 6.1 6.12 sid 5.10
E2E_RERUN ?= 0
# The landing path runs the full tier on 6.12, but for the tests
# E2E_LANDING_SPREAD puts on 6.1's lane (rdmabench's, Prometheus' scrape,
# the failed creates): their kernel side is covered on every kernel by
# the other tests. make e2e runs it on every E2E_FULL_KERNELS.
E2E_LANDING_FULL ?= 6.12
# The landing path runs each test whose kernel side is the same on every
# kernel (a workload's or a container's, a command's behaviour, the
# call sites' uprobes) on one kernel's lane, named here, instead of on
# all: its lane only (its full-tier tests included), skipped on the
# others, which say so (RDMATRACE_E2E_ELSEWHERE). The tests of hooks,
# netlink's answers, the kernel's events and leaks at an unregister run on
# every kernel. make e2e runs everything on every kernel. 5.10 takes only
# tests that pass without module BTF; sid's guest is the slowest.
# The two-host test (e2e-twohost, on TWOHOST_KERNEL when KERNELS has it)
# runs in this kernel's lane once its guest ended: 5.10's lane ends about
# 13 minutes before the others (in a lane of its own when KERNELS lacks
# that kernel).
E2E_TWOHOST_AFTER ?= 5.10
E2E_LANDING_SPREAD ?= \
	TestNFSOverRDMAUnderLeaks=6.1 TestLeaksNameTheCallSiteOfEachLeak=6.1 \
	TestWhyNamesConnectFailuresInWords=6.1 TestExporterServesBeforeTheRDMAStackAndFollowsIt=6.1 \
	TestOwnersArePlacedInTheirContainer=6.1 TestDoctorNamesEachCauseMadeOnPurpose=6.1 \
	TestIproute2Habits=6.1 TestOutliersNameTheNoise=6.1 TestBenchLatTablesAndFiles=6.1 \
	TestBenchBadInput=6.1 TestFailedCallsNameTheirLimits=6.1 \
	TestHealthSaysWhenTheNodeIsUnfit=6.12 \
	TestLeaksOfAProgram=sid TestBindFloodDoesNotStarveLifecycleEvents=sid \
	TestTwoWorkloadsInTwoContainers=sid TestNVMeOverRDMAUnderLeaks=sid \
	TestLeaksNamesThePortItsProgramCouldNotHave=sid TestLeaksOfAChildThatExitsAtOnce=sid \
	TestAQuietRunSaysOneLineAtEachEnd=sid TestTraceSendsEventsToAnOTLPReceiver=sid \
	TestHabitsOfPsSsBpftraceAndRdma=sid TestExporterCountsWhatNetlinkAndTheTracerSee=sid \
	TestLeaksIgnoresAReusedPID=sid TestLeaksRunsTheProgramAsTheSudoUser=sid \
	TestTraceOfAProgramRecordsAndReadsBack=sid TestLeaksWatchOfACleanRemovalExitsZero=sid \
	TestTraceWithGivenBTF=5.10
e2e-landing: $(E2E_BIN)
	@set -e; lanes=""; left=" $(KERNELS) "; \
	for lane in $(E2E_LANES); do l=""; \
	  for k in $$(echo $$lane | tr , ' '); do case "$$left" in *" $$k "*) l="$$l,$$k"; left=$$(echo "$$left" | sed "s/ $$k / /");; esac; done; \
	  [ -z "$$l" ] || lanes="$$lanes $${l#,}"; \
	done; for k in $$left; do lanes="$$lanes $$k"; done; \
	twohost=""; case " $(KERNELS) " in *" $(TWOHOST_KERNEL) "*) twohost=own; \
	  for lane in $$lanes; do [ "$$lane" != "$(E2E_TWOHOST_AFTER)" ] || twohost=$$lane; done;; esac; \
	rm -f out/e2e-twohost.rc; \
	run_twohost() { start=$$(date +%s); trc=0; \
	  $(MAKE) --no-print-directory -o $(E2E_BIN) e2e-twohost E2E_RERUN=1 >out/e2e-twohost.log 2>&1 || trc=$$?; echo $$trc >out/e2e-twohost.rc; \
	  ( flock 9; cat out/e2e-twohost.log; \
	    tally=$$(sed -n 's/^== e2e tally: //p' out/e2e-twohost.log | tail -n 1); \
	    echo "== e2e on two guests of Debian $(TWOHOST_KERNEL): $${tally:-no tally, the pair ended before its test did}, in $$(( $$(date +%s) - start ))s, $$(date -u +%T)" ) 9>>out/e2e-print.lock; }; \
	echo "== e2e in lanes side by side:$$lanes$$(case $$twohost in "") ;; own) echo " (the two-host test in a lane of its own)";; *) echo " (the two-host test after $$twohost)";; esac), $$(date -u +%T)"; \
	for lane in $$lanes; do \
	  ( for k in $$(echo $$lane | tr , ' '); do \
	      start=$$(date +%s); \
	      krc=0; $(MAKE) --no-print-directory -o $(E2E_BIN) e2e KERNELS=$$k E2E_RERUN=1 E2E_FULL_KERNELS='$(E2E_LANDING_FULL)' E2E_SPREAD='$(E2E_LANDING_SPREAD)' >out/e2e-$$k.log 2>&1 || krc=$$?; echo $$krc >out/e2e-$$k.rc; \
	      ( flock 9; cat out/e2e-$$k.log; \
	        tally=$$(sed -n 's/^== e2e tally: //p' out/e2e-$$k.log | tail -n 1); \
	        echo "== e2e on Debian $$k: $${tally:-no tally, the guest ended before its tests did}, in $$(( $$(date +%s) - start ))s, $$(date -u +%T)" ) 9>>out/e2e-print.lock; \
	    done; [ "$$lane" != "$$twohost" ] || run_twohost ) & \
	done; [ "$$twohost" != own ] || run_twohost & \
	wait; \
	rc=0; for lane in $$lanes; do for k in $$(echo $$lane | tr , ' '); do \
	  if [ -s out/e2e-$$k/digest.txt ]; then echo "== e2e on Debian $$k, tests that failed:"; sed 's/^/  /' out/e2e-$$k/digest.txt; fi; \
	  [ "$$(cat out/e2e-$$k.rc 2>/dev/null)" = 0 ] || { rc=1; if [ -s out/e2e-$$k/digest.txt ]; then echo "== e2e on Debian $$k failed" >&2; \
	    else echo "== e2e on Debian $$k failed; the end of its output:" >&2; tail -n 25 out/e2e-$$k.log | sed 's/^/  /' >&2; fi; }; done; done; \
	if [ -n "$$twohost" ]; then \
	  if [ -s out/e2e-twohost/digest.txt ]; then echo "== e2e on two guests of Debian $(TWOHOST_KERNEL), tests that failed:"; sed 's/^/  /' out/e2e-twohost/digest.txt; fi; \
	  [ "$$(cat out/e2e-twohost.rc 2>/dev/null)" = 0 ] || { rc=1; if [ -s out/e2e-twohost/digest.txt ]; then echo "== e2e on two guests failed" >&2; \
	    else echo "== e2e on two guests failed; the end of its output:" >&2; tail -n 25 out/e2e-twohost.log | sed 's/^/  /' >&2; fi; }; \
	fi; \
	echo "== e2e done, $$(date -u +%T)"; exit $$rc

# What the guests need, fetched and built while the unit tests and the
# fuzz smoke run: Debian's kernels, headers and sources, the modules built
# from them (the leak module, siw where Debian lacks it, 5.10's modules'
# BTF), our workloads and the guest test binary.
guest-prepare: $(E2E_BIN)
	@set -e; case " $(KERNELS) " in *" $(TWOHOST_KERNEL) "*) guest/vlogs.sh >/dev/null;; esac; \
	for k in $(KERNELS); do \
	  guest/kernel.sh $$k >/dev/null; \
	  guest/kmod.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  guest/siw.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	  guest/modbtf.sh $$k out/kmod >/dev/null || [ $$? = 3 ]; \
	done

# Every test: the gates and unit tests, with the guests' material prepared
# beside them, then the guest tests. The fuzz smoke and the packages' smoke
# run at the lowest priority beside the rest, on the cycles the emulated
# guests leave (they wait on their kernels' timers about as much as they
# compute): 4 of the 7 minutes before the guests, in turn. The packages'
# guest waits for the guests' material (its 6.1 kernel).
test: test-tools
	@set -e; mkdir -p out; start=$$(date +%s); rm -f out/guest-prepare.rc out/beside.rc; \
	( $(MAKE) --no-print-directory guest-prepare >out/guest-prepare.log 2>&1; echo $$? >out/guest-prepare.rc ) & prep=$$!; \
	$(MAKE) --no-print-directory unit || { wait $$prep; exit 1; }; \
	( rc=0; nice -n 19 $(MAKE) --no-print-directory fuzz-smoke >out/beside.log 2>&1 || rc=$$?; \
	  while [ ! -s out/guest-prepare.rc ]; do sleep 2; done; \
	  [ "$$(cat out/guest-prepare.rc)" != 0 ] || nice -n 19 $(MAKE) --no-print-directory package-smoke >>out/beside.log 2>&1 || rc=$$?; \
	  echo $$rc >out/beside.rc ) & beside=$$!; \
	echo "== waiting for the guests' material, $$(date -u +%T)"; wait $$prep; cat out/guest-prepare.log; \
	[ "$$(cat out/guest-prepare.rc)" = 0 ] || { echo "== preparing the guests failed" >&2; wait $$beside; exit 1; }; \
	echo "== before the guests: $$(( $$(date +%s) - start ))s, $$(date -u +%T)"; \
	erc=0; $(MAKE) --no-print-directory e2e-landing || erc=$$?; \
	echo "== waiting for the fuzz smoke and the packages' smoke, $$(date -u +%T)"; wait $$beside; cat out/beside.log; \
	[ "$$(cat out/beside.rc)" = 0 ] || { echo "== the fuzz smoke or the packages' smoke failed" >&2; exit 1; }; \
	exit $$erc

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
out/%: guest/workloads/%.c | test-tools
	mkdir -p out && gcc -O2 -Wall -o $@ $< -libverbs

# leaksites, as the call-site docs ask a program to be built (DWARF, frame
# pointers), and a stripped copy.
out/leaksites: guest/workloads/leaksites.c | test-tools
	mkdir -p out && gcc -g -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -o $@ $< -libverbs -lrdmacm
	objcopy --strip-all $@ $@-stripped

# Measurements: Go benchmarks, then in the guest the netlink and tracer
# scripts and the e2e measurements (RDMATRACE_E2E_BENCH=1: the tracer's
# cost on rdmabench, rdmabench lat against perftest, reg_mr against size),
# which the landing path (make test) skips.
bench: test-tools build $(WORKLOADS) $(E2E_BIN)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	@set -e; for k in $(TRACE_KERNELS); do \
	  guest/run -k $$k -t 1200 -o out/bench-res-$$k -- guest/bench-res.sh $(BIN); \
	  guest/run -k $$k -t 1200 -o out/bench-trace-$$k -- guest/bench-trace.sh $(BIN) out/churn; \
	  RDMATRACE_E2E_BENCH=1 guest/run -k $$k -t 1200 -o out/bench-e2e-$$k -- $(E2E_BIN) -test.v -test.run 'TestBenchTracerCost|TestBenchLatMatchesPerftest|TestBenchCtrlRegistrationGrowsWithSize' -rdmatrace $(BIN); \
	done

# Release artifacts under DIST (deploy/packaging/release.sh): static
# rdmatrace for each of RELEASE_ARCHES, its .deb and .rpm, a CycloneDX SBOM,
# the OCI image of both architectures, SHA256SUMS. A vX.Y.Z tag on the
# commit must agree with VERSION.
DIST ?= dist
RELEASE_ARCHES ?= amd64 arm64
release: man
	@echo "== release $(VERSION), $$(date -u +%T)"
	@if [ -n "$(GIT_TAG)" ] && [ "$(GIT_TAG)" != "v$(RELEASE)" ]; then \
	  echo "release: the commit's tag $(GIT_TAG) and VERSION ($(RELEASE)) disagree: change one" >&2; exit 1; fi
	GO='$(GO)' VERSION='$(VERSION)' LDFLAGS='$(LDFLAGS)' DIST='$(DIST)' ARCHES='$(RELEASE_ARCHES)' MAN='$(MAN)' \
	  deploy/packaging/release.sh

# Builds the release twice, the second time with an empty build cache,
# and compares: the same commit must give the same bytes.
release-check:
	@$(MAKE) --no-print-directory release DIST=out/release-a VERSION='$(VERSION)'
	@rm -rf out/gocache-b && GOCACHE=$(CURDIR)/out/gocache-b $(MAKE) --no-print-directory release DIST=out/release-b VERSION='$(VERSION)'
	@if diff out/release-a/SHA256SUMS out/release-b/SHA256SUMS; then \
	  echo "release-check: two builds are identical"; rm -rf out/gocache-b; \
	else echo "release-check: two builds of the same commit differ (above)" >&2; exit 1; fi

# The OCI image alone (an index of amd64 and arm64, as in make release),
# without a container engine: $(DIST)/rdmatrace-VERSION-oci.tar. Pushing:
# docs/install.md. deploy/container/Containerfile builds the same image
# with buildah or podman.
image: arm64 rdmatrace
	@rm -rf out/image && mkdir -p $(DIST)
	cd deploy/container && $(GO) run ./ociimage -out ../../out/image -version '$(VERSION)' -epoch $(SOURCE_DATE_EPOCH) -licenses ../../LICENSES \
	  amd64=$(CURDIR)/$(BIN) arm64=$(CURDIR)/$(BIN)-arm64
	tar -C out/image --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
	  --format=ustar -cf $(DIST)/rdmatrace-$(VERSION)-oci.tar .

# The packages as a user installs them: the .deb with dpkg in a Debian
# 6.1 guest (its root is a writable overlay of the host's), then
# --version, res and a short trace from the installed binary; the .rpm
# inspected and installed into a scratch root with Debian's rpm.
package-smoke: release test-tools
	@echo "== package smoke (the .rpm, then the .deb in a 6.1 guest), $$(date -u +%T)"
	@start=$$(date +%s); \
	guest/package-smoke-rpm.sh $(DIST) '$(VERSION)' && \
	guest/run -k 6.1 -t 600 -o out/package-smoke -- guest/package-smoke-deb.sh $(DIST) '$(VERSION)' && \
	echo "== package smoke done in $$(( $$(date +%s) - start ))s, $$(date -u +%T)"

demo: rdmatrace
	guest/run -k 6.1 -t 600 -o out/demo -- guest/demo.sh $(BIN)

# The outputs docs/quickstart.md and docs/cookbook.md show, and the
# recordings their pictures are drawn from, made in a 6.12 guest by the
# faults they are about (guest/docs-capture.sh): out/docs-capture/.
docs-capture: rdmatrace $(WORKLOADS)
	guest/run -k 6.12 -t 1200 -o out/docs-capture -- guest/docs-capture.sh $(BIN) out

# The output of `rdmatrace peer` docs/cookbook.md shows: two guests on
# one link (guest/pair), a log store in a (guest/docs-peer.sh).
docs-peer: rdmatrace vlogs
	vl=$$(guest/vlogs.sh); guest/pair -k 6.12 -t 900 -o out/docs-peer -a "guest/docs-peer.sh $(BIN) $$vl" -b "guest/docs-peer.sh $(BIN) $$vl"

# The docs' pictures (docs/top.png, docs/rping-sequence.svg), drawn from
# the recordings of a docs-capture run kept in testdata/docs; a unit test
# (cmd/docpictures) checks that docs/ holds what this draws.
docs-pictures:
	$(GO) run ./cmd/docpictures docs testdata/docs docs

clean:
	rm -rf bin out dist
