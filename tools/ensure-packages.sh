#!/usr/bin/env bash
# Installs the Debian packages the test suite and demo need, only when a command is missing.
# Usage: tools/ensure-packages.sh COMMAND=PACKAGE ...   (e.g. valgrind=valgrind tshark=tshark)
# Without root (or without apt-get) it prints what is missing and the tests that need it say
# SKIPPED with the reason.
set -u
missing=()
for pair in "$@"; do
  cmd=${pair%%=*}
  pkg=${pair#*=}
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-packages: missing ${missing[*]} (not root or no apt-get): tests needing them will be SKIPPED" >&2
  exit 0
fi
echo "ensure-packages: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || true
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
  || echo "ensure-packages: could not install ${missing[*]}: tests needing them will be SKIPPED" >&2
exit 0
