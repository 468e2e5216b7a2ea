#!/usr/bin/env bash
# Installs what `go build -tags cuda ./...` needs on a Debian bookworm host without a GPU
# (CI) or with one:
#
#   nvidia-cuda-dev      cuda.h and the stub libcuda.so (CUDA 11.8) that cgo compiles and
#                        links gorgonia.org/cu against. At run time the real driver's
#                        libcuda.so.1 (installed with the NVIDIA driver) is used instead.
#   nvidia-cuda-toolkit  nvcc, only to regenerate pkg/gpu/kernels/*.ptx
#                        (`go generate ./pkg/gpu/...`) and to let the stale-PTX test
#                        compare; optional (--nvcc).
#
# Both live in bookworm's contrib / non-free components, which this script adds (a
# deb822 sources file with the same URIs and suites as debian.sources) if missing.
# It is idempotent: a second run changes nothing and downloads nothing.
#
# Usage: scripts/cuda/install-deps.sh [--nvcc] [--dry-run]
#   --nvcc     also install nvidia-cuda-toolkit (nvcc; about 1.5 GB more on disk)
#   --dry-run  print what would be done
#
# Must run as root (or with sudo available).
set -euo pipefail

want_nvcc=0
dry=0
for arg in "$@"; do
	case "$arg" in
	--nvcc) want_nvcc=1 ;;
	--dry-run) dry=1 ;;
	-h | --help)
		sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "install-deps.sh: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "install-deps.sh: must run as root (or have sudo)" >&2
		exit 1
	fi
fi

run() {
	echo "+ $*"
	if [ "$dry" -eq 0 ]; then
		$SUDO "$@"
	fi
}

if ! grep -qs 'bookworm' /etc/os-release; then
	echo "install-deps.sh: warning: not Debian bookworm; package names may differ" >&2
fi

pkgs=(nvidia-cuda-dev)
if [ "$want_nvcc" -eq 1 ]; then
	pkgs+=(nvidia-cuda-toolkit)
fi

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps.sh: already installed: ${pkgs[*]}"
	exit 0
fi

# contrib / non-free: enabled if some apt source already lists them (any format).
has_nonfree() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		if grep -Eqs '^[[:space:]]*(deb[[:space:]].*[[:space:]]non-free([[:space:]]|$)|Components:.*[[:space:]]non-free([[:space:]]|$))' "$f" &&
			grep -Eqs '^[[:space:]]*(deb[[:space:]].*[[:space:]]contrib([[:space:]]|$)|Components:.*[[:space:]]contrib([[:space:]]|$))' "$f"; then
			return 0
		fi
	done
	return 1
}

updated=0
if ! has_nonfree; then
	src=/etc/apt/sources.list.d/contrib.sources
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	uri=http://deb.debian.org/debian
	# Reuse the mirror of debian.sources when there is one.
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		u=$(awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
		[ -n "$u" ] && uri=$u
	fi
	echo "install-deps.sh: adding contrib non-free in $src ($uri)"
	content="Types: deb
URIs: $uri
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: $keyring
"
	if [ "$dry" -eq 0 ]; then
		printf '%s' "$content" | $SUDO tee "$src" >/dev/null
	else
		printf '%s' "$content"
	fi
	run apt-get update
	updated=1
fi

if [ "$updated" -eq 0 ] && ! apt-cache show nvidia-cuda-dev >/dev/null 2>&1; then
	run apt-get update
fi

echo "install-deps.sh: installing ${missing[*]}"
run env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"

if [ "$dry" -eq 0 ]; then
	hdr=$(dpkg -L nvidia-cuda-dev | grep -m1 '/cuda\.h$' || true)
	stub=$(dpkg -L nvidia-cuda-dev libcuda1 2>/dev/null | grep -m1 -E '/libcuda\.so$' || true)
	echo "install-deps.sh: cuda.h: ${hdr:-not found}"
	echo "install-deps.sh: libcuda.so (link stub): ${stub:-not found}"
	if command -v nvcc >/dev/null 2>&1; then
		nvcc --version | tail -n 2
	fi
fi
