#!/usr/bin/env bash
# Builds the container image offline (see Dockerfile): a static binary, the
# CA bundle and an empty data directory in dist/image, then `podman build`
# (CONTAINER_TOOL=docker for docker). Usage: scripts/image.sh [TAG]
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-gatehouse:dev}"
tool="${CONTAINER_TOOL:-podman}"
ctx=dist/image
rm -rf "$ctx"
mkdir -p "$ctx/data"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/gatehouse" ./cmd/gatehouse
cp "${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}" "$ctx/ca-certificates.crt"
version=$("$ctx/gatehouse" version | cut -d' ' -f2)
format=()
if [ "$tool" = podman ] || [ "$tool" = buildah ]; then format=(--format docker); fi
"$tool" build "${format[@]}" --build-arg VERSION="$version" -t "$tag" -f Dockerfile "$ctx"
