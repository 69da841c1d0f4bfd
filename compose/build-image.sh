#!/usr/bin/env bash
# Builds local/a2a-wrapper:dev from Debian packages, PyPI and the npm registry only (no image registry):
#   1. local/bookworm-base:1  debootstrap minbase of bookworm + `docker import` (skipped when it exists)
#   2. local/a2a-wrapper:dev  compose/Dockerfile FROM that base: the project and the pinned backends
# Needs root (debootstrap), a running engine (DOCKER_HOST) and the debootstrap package.
# Usage: compose/build-image.sh [--backends npm|host] [IMAGE]   (env: BASE_IMAGE, DEBIAN_MIRROR, HOST_CA_BUNDLE,
#        PYTHON: a python that imports a2a_wrapper, for --backends host)
#   --backends npm   (default) the build installs the pinned backends with Debian's Node.js 18 and npm
#   --backends host  copies this machine's managed install (`a2a-wrap backends install`): no Node.js, faster
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
backends=npm
if [ "${1:-}" = "--backends" ]; then backends="$2"; shift 2; fi
case "$backends" in npm|host) ;; *) echo "--backends: npm or host, not '$backends'" >&2; exit 2;; esac
image="${1:-local/a2a-wrapper:dev}"
base="${BASE_IMAGE:-local/bookworm-base:1}"
ca_bundle="${HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The Debian mirror this machine's apt already uses (deb822 or one-line sources).
debian_mirror() {
    local uri
    uri="$(grep -hoE '^URIs:[[:space:]]*\S+|^deb[[:space:]]+\S+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list \
        2>/dev/null | grep -v security | head -n1 | awk '{print $2}')"
    [ -n "$uri" ] || { echo "no Debian mirror found in /etc/apt; set DEBIAN_MIRROR" >&2; exit 1; }
    echo "$uri"
}

if docker image inspect "$base" >/dev/null 2>&1; then
    echo "base image $base exists; skipped"
else
    SECONDS=0
    command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$work/rootfs" "${DEBIAN_MIRROR:-$(debian_mirror)}" >"$work/debootstrap.log" 2>&1 \
        || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
    rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
    tar -C "$work/rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' -c 'ENV LANG=C.UTF-8' - "$base" >/dev/null
    rm -rf "$work/rootfs"
    echo "base image $base built in ${SECONDS} s"
fi

# The build context: the project's source (no caches, no state) and the host's CA bundle.
SECONDS=0
mkdir -p "$work/context/src"
cp "$repo/compose/Dockerfile" "$work/context/Dockerfile"
cp "$ca_bundle" "$work/context/host-ca.crt"
cp "$repo/pyproject.toml" "$repo/README.md" "$work/context/src/"
tar -C "$repo" --exclude='__pycache__' --exclude='*.pyc' -c a2a_wrapper | tar -C "$work/context/src" -x
mkdir "$work/context/backends"
if [ "$backends" = host ]; then
    # The folder `a2a-wrap backends install` fills (A2A_WRAP_BACKENDS_DIR or the per-user data folder).
    "${PYTHON:-python3}" - "$work/context/backends" <<'PY'
import shutil, sys
from a2a_wrapper.backends.install import backends_dir, find_binary
for kind in ("opencode", "copilot"):
    find_binary(kind)  # a clear error when one is missing
    shutil.copytree(backends_dir() / kind, f"{sys.argv[1]}/{kind}", symlinks=True)
PY
fi
sed -i "s|^FROM local/bookworm-base:1|FROM $base|" "$work/context/Dockerfile"
docker build --quiet -t "$image" "$work/context" >/dev/null
echo "image $image (backends: $backends) built in ${SECONDS} s ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
