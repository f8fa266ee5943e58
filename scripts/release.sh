#!/usr/bin/env bash
# release.sh VERSION OUTDIR — the release binaries of replay and their
# checksums: a static binary for each platform below, named
# replay_VERSION_OS_ARCH (.exe on Windows), built from this checkout with
# the version set (replay version prints it), and SHA256SUMS beside them,
# checked once written. make release writes them to dist/; make cross
# builds them into a temporary directory as the release's dry run.
set -euo pipefail
version=${1:?usage: release.sh VERSION OUTDIR}
out=${2:?usage: release.sh VERSION OUTDIR}
platforms=${RELEASE_PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}
go=${GO:-go}
# -trimpath keeps this machine's paths out of the binaries; make cross's
# dry run leaves it out so that go vet reuses what the build compiled.
flags=${RELEASE_FLAGS--trimpath}
mkdir -p "$out"
cd "$(dirname "$0")/.."
names=()
for p in $platforms; do
  os=${p%/*} arch=${p#*/}
  name="replay_${version}_${os}_${arch}"
  [ "$os" = windows ] && name="$name.exe"
  echo "== $name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch $go build $flags -buildvcs=auto \
    -ldflags "-s -w -X main.release=$version" -o "$out/$name" ./cmd/replay
  names+=("$name")
done
(cd "$out" && sha256sum "${names[@]}" > SHA256SUMS && sha256sum --quiet -c SHA256SUMS)
echo "release $version: ${#names[@]} binaries (${names[*]}) and SHA256SUMS in $out"
