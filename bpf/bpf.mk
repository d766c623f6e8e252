# Included by the top Makefile: regenerate the BPF side (make generate).
.PHONY: bpf-generate bpf-tools

bpf-tools:
	@command -v clang >/dev/null && command -v llvm-strip >/dev/null && test -f /usr/include/bpf/bpf_helpers.h || \
	  { echo "bpf: installing clang, llvm and libbpf-dev from Debian"; \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends clang llvm libbpf-dev; }

bpf-generate: bpf-tools
	bpf/gen-vmlinux.sh
	cd bpf && $(GO) generate ./
