#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# QKV Lab set-up for Debian 12: installs the missing Debian packages, builds a Release build, then
#   ./setup.sh run  [FILE|example:NAME]   launches the window (default: the "I love AI" example)
#   ./setup.sh test                       runs the whole test suite with ctest
set -euo pipefail
cd "$(dirname "$0")"

packages=(g++ cmake make pkg-config qt6-base-dev qt6-svg-dev libqcustomplot-dev libeigen3-dev
          nlohmann-json3-dev libpcre2-dev libbenchmark-dev libgl-dev libopenblas0 libdnnl2
          librsvg2-bin universal-ctags)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "Installing missing Debian packages: ${missing[*]}"
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"

case "${1:-run}" in
  run)
    shift || true
    exec build/release/app/qkvlab "$@"
    ;;
  test)
    ctest --preset release -j "$jobs"
    ;;
  *)
    echo "usage: ./setup.sh [run [FILE|example:NAME] | test]" >&2
    exit 2
    ;;
esac
