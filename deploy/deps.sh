#!/bin/sh
# deps.sh - install the Debian 12 packages memplan builds, tests and runs with.
# Idempotent and quiet when everything is present; uses sudo when not root.
set -eu

# Everything a test uses is here, and a test whose tool is missing fails:
# postgresql for the replica test, python3-torch for the PyTorch client, python3-pip and
# python3-venv for the client's install test, prometheus for promtool (the metrics test
# checks the exposition with it), chromium for the dashboard test, systemd for
# systemd-analyze and kubectl (Debian: kubernetes-client) for the deployment test,
# groff-base for the man pages' check, binutils for readelf, Slurm (slurmctld, slurmd,
# the job_submit/lua plugin) and munge for the Slurm plugin's test.
PKGS="build-essential pkg-config clang libclang-rt-14-dev libjansson-dev libssl-dev libmicrohttpd-dev libuv1-dev \
libsqlite3-dev check libsubunit-dev curl chromium fonts-dejavu-core openssl python3-yaml wrk \
python3-pip python3-setuptools python3-venv python3-torch python3-torchvision postgresql libpq-dev \
prometheus systemd groff-base binutils slurm-wlm slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge"
# kubectl from Debian unless one is installed already (another vendor's package of it
# would conflict with kubernetes-client over /usr/bin/kubectl).
command -v kubectl >/dev/null 2>&1 || PKGS="$PKGS kubernetes-client"
[ "${1:-}" = "--print" ] && { echo "$PKGS"; exit 0; }

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "deps.sh: need root or sudo to install:$missing" >&2; exit 1; }
  SUDO="sudo"
fi
echo "deps.sh: installing:$missing" >&2
$SUDO apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
