#!/usr/bin/env bash
# make release: rdmatrace's release artifacts under DIST, for each of
# ARCHES: the static binary, the .deb and the .rpm (nfpm.yaml beside this
# file), a CycloneDX SBOM; for the host's architecture, rdmabench and its
# rdmatrace-bench .deb and .rpm (nfpm-bench.yaml) with their SBOM; the OCI
# image of both architectures (deploy/container/ociimage); and SHA256SUMS of
# them all. Every time stamp is SOURCE_DATE_EPOCH's, so the
# same commit gives the same bytes (make release-check).
#
# The Makefile sets GO, VERSION, LDFLAGS, DIST, ARCHES, SOURCE_DATE_EPOCH,
# MAN and BENCH_MAN (the man pages it built).
#
# rdmabench is a cgo program linking rdma-core's libibverbs and librdmacm:
# it is built for the host's architecture only, against the host's
# rdma-core headers (make rdmabench says which packages give them); an
# arm64 rdmatrace-bench needs an arm64 build host.
set -euo pipefail
: "${GO:?}" "${VERSION:?}" "${LDFLAGS:?}" "${DIST:?}" "${ARCHES:?}" "${SOURCE_DATE_EPOCH:?}" "${MAN:?}" "${BENCH_MAN:?}"
# The tools, pinned: module versions from the Go module proxy.
nfpm=(run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2)
cyclonedx=(run github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0)

phase() { echo "== release: $*, $(date -u +%T)"; }

rm -rf "$DIST"
mkdir -p "$DIST"
# What the packages take from this build (nfpm.yaml names it).
stage=out/package
rm -rf "$stage"
mkdir -p "$stage"

# A man page compressed the reproducible way (-n: no name, no time).
gzip -n -9 <"$MAN" >"$stage/rdmatrace.8.gz"
gzip -n -9 <"$BENCH_MAN" >"$stage/rdmabench.1.gz"

# The version as both packagers write it: nfpm's semver schema maps
# X.Y.Z-PRE+META to X.Y.Z~PRE+META, so that a development build sorts
# before X.Y.Z, and the release is 1 (nfpm*.yaml). rdmatrace-bench depends
# on exactly this rdmatrace.
pkgver=$VERSION
case $pkgver in *-*) pkgver=${pkgver%%-*}~${pkgver#*-} ;; esac
export PKG_FULL_VERSION=$pkgver-1

# The changelog, one entry for this build in chglog's format, as each
# packager wants the version: the .deb's changelog.Debian.gz names the
# package's version, rpm's %changelog the semantic one.
changelog() { # PACKAGER
	local v=$VERSION
	[ "$1" = deb ] && v=$PKG_FULL_VERSION
	cat >"$stage/changelog.yml" <<-EOF
		- semver: "$v"
		  date: $(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
		  packager: The rdmatrace authors <https://github.com/rdmatrace/rdmatrace>
		  deb:
		    urgency: medium
		    distributions: [stable]
		  changes:
		    - note: |-
		        rdmatrace $VERSION.
		        The changes are in the project's history: https://github.com/rdmatrace/rdmatrace/commits
	EOF
}

hostarch=$("$GO" env GOHOSTARCH)
for arch in $ARCHES; do
	phase "rdmatrace for linux/$arch"
	bin=$DIST/rdmatrace-$VERSION-linux-$arch
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch "$GO" build -trimpath -ldflags="$LDFLAGS" -tags urfave_cli_no_docs -o "$bin" ./cmd/rdmatrace
	if readelf -lW "$bin" | grep -q 'program interpreter'; then
		echo "release: $bin is dynamically linked: it must be static" >&2
		exit 1
	fi
done

# The completions are the same on every architecture: the host's binary
# writes them.
hostbin=$DIST/rdmatrace-$VERSION-linux-$hostarch
[ -x "$hostbin" ] || { echo "release: ARCHES ($ARCHES) must include the host's ($hostarch) to write the completions" >&2; exit 1; }
for sh in bash zsh fish; do
	"$hostbin" completion "$sh" >"$stage/completion.$sh"
done

# nfpm wants the package's version without the build metadata's "+" on
# Debian's side; the semver schema maps X.Y.Z-dev+gC to X.Y.Z~dev+gC (deb)
# and the like for rpm, so that a development build sorts before X.Y.Z.
for arch in $ARCHES; do
	phase "packages for linux/$arch"
	cp "$DIST/rdmatrace-$VERSION-linux-$arch" "$stage/rdmatrace"
	for packager in deb rpm; do
		changelog "$packager"
		ARCH=$arch PKG_VERSION=$VERSION \
			"$GO" "${nfpm[@]}" package --config deploy/packaging/nfpm.yaml --packager "$packager" --target "$DIST/" >/dev/null
	done
	# The SBOM of the binary itself: the modules and build settings that
	# the Go toolchain recorded in it (go version -m).
	phase "SBOM for linux/$arch"
	"$GO" "${cyclonedx[@]}" bin -json -notimestamp -noserial -version "v$VERSION" \
		-output "$DIST/rdmatrace-$VERSION-linux-$arch.cdx.json" "$DIST/rdmatrace-$VERSION-linux-$arch"
done

# rdmabench: cgo, so for the host's architecture alone (above).
phase "rdmabench for linux/$hostarch"
bench=$DIST/rdmabench-$VERSION-linux-$hostarch
CGO_ENABLED=1 "$GO" build -trimpath -ldflags="$LDFLAGS" -tags urfave_cli_no_docs -o "$bench" ./cmd/rdmabench
cp "$bench" "$stage/rdmabench"
# The C library it was linked against sets the oldest it runs on: the
# newest symbol version it takes (dpkg-shlibdeps' way, without a source
# package).
BENCH_GLIBC=$(objdump -T "$bench" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
[ -n "$BENCH_GLIBC" ] || { echo "release: $bench takes no versioned glibc symbol: is it linked against glibc?" >&2; exit 1; }
export BENCH_GLIBC
for packager in deb rpm; do
	changelog "$packager"
	ARCH=$hostarch PKG_VERSION=$VERSION \
		"$GO" "${nfpm[@]}" package --config deploy/packaging/nfpm-bench.yaml --packager "$packager" --target "$DIST/" >/dev/null
done
"$GO" "${cyclonedx[@]}" bin -json -notimestamp -noserial -version "v$VERSION" -output "$bench.cdx.json" "$bench"

phase "OCI image"
images=()
for arch in $ARCHES; do
	images+=("$arch=$(pwd)/$DIST/rdmatrace-$VERSION-linux-$arch")
done
layout=$(pwd)/$stage/image
(cd deploy/container && "$GO" run ./ociimage -out "$layout" -version "$VERSION" -epoch "$SOURCE_DATE_EPOCH" -licenses ../../LICENSES "${images[@]}")
# The layout as one archive, reproducibly: sorted, root's, the epoch's time.
tar -C "$layout" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
	--format=ustar -cf "$DIST/rdmatrace-$VERSION-oci.tar" .

(cd "$DIST" && sha256sum -- * >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
phase "done: $DIST"
cat "$DIST/SHA256SUMS"
