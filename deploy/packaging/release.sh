#!/usr/bin/env bash
# make release: rdmatrace's release artifacts under DIST, for each of
# ARCHES: the static binary, the .deb and the .rpm (nfpm.yaml beside this
# file), a CycloneDX SBOM; the OCI image of both (deploy/container/ociimage); and
# SHA256SUMS of them all. Every time stamp is SOURCE_DATE_EPOCH's, so the
# same commit gives the same bytes (make release-check).
#
# The Makefile sets GO, VERSION, LDFLAGS, DIST, ARCHES, SOURCE_DATE_EPOCH,
# and MAN (the man page it built).
set -euo pipefail
: "${GO:?}" "${VERSION:?}" "${LDFLAGS:?}" "${DIST:?}" "${ARCHES:?}" "${SOURCE_DATE_EPOCH:?}" "${MAN:?}"
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
		ARCH=$arch PKG_VERSION=$VERSION \
			"$GO" "${nfpm[@]}" package --config deploy/packaging/nfpm.yaml --packager "$packager" --target "$DIST/" >/dev/null
	done
	# The SBOM of the binary itself: the modules and build settings that
	# the Go toolchain recorded in it (go version -m).
	phase "SBOM for linux/$arch"
	"$GO" "${cyclonedx[@]}" bin -json -notimestamp -noserial -version "v$VERSION" \
		-output "$DIST/rdmatrace-$VERSION-linux-$arch.cdx.json" "$DIST/rdmatrace-$VERSION-linux-$arch"
done

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
