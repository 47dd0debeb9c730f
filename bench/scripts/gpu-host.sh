#!/usr/bin/env bash
# Everything issue 32 asks of a GPU host, in one command (its device time is short):
#   bench/scripts/gpu-host.sh OUTDIR [ROWS]      (FEED=0 in the environment: leave out gpu_feed.py)
# Run from the project root on the GPU host, with target/gpu-bundle carried there (made here by
# ../shared/tools/gpu-bundle.sh --tests DIR, DIR/target/test-classes holding the gpu module's test
# classes and ArrowCDeviceTest's; with the working tree, the bundle must stay under the 64 MiB the
# device tool carries: on 2026-11-26 and -27 that needed hazelcast-*, vertx-hazelcast-* and
# prometheus-metrics-exposition-* added to the script's list of jars left out, which no GPU command
# uses, and the runtime linked with --compress=zip-0 (it is xz'd after): a copy of the script made
# with  sed -e 's/--compress=zip-9/--compress=zip-0/' -e 's/rocksdbjni-\*|/rocksdbjni-*|hazelcast-*|vertx-hazelcast-*|prometheus-metrics-exposition-*|/'
# came to 51 MiB). Rebuilt jars can be laid over the bundle from target/gpu-overlay (jars, and
# tests/ with test classes: no need to pack again, which takes minutes). Writes OUTDIR/tests.log, OUTDIR/gpu.json (strata bench gpu),
# OUTDIR/feed.json (bench/peers/gpu_feed.py: the Python client feeding torch against numpy.memmap)
# and OUTDIR/host.txt (the device and versions).
set -uo pipefail
out=${1:?usage: gpu-host.sh OUTDIR [ROWS]}
rows=${2:-2000000}
mkdir -p "$out"
S=target/gpu-bundle/strata-gpu
py=$(command -v python3)
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv;
  nproc; free -g | head -2; "$py" -c 'import torch, numpy, pyarrow; print(torch.__version__, numpy.__version__, pyarrow.__version__)'; } \
  > "$out/host.txt" 2>&1
cat "$out/host.txt"
t0=$(date +%s)
# Rebuilt jars laid over the bundle (no need to rebuild the whole bundle for a few jars).
if [ -d target/gpu-overlay ]; then
  "$S" --version > /dev/null 2>&1 || true   # unpacks the bundle
  cp target/gpu-overlay/*.jar /tmp/strata-gpu/lib/ && cp -r target/gpu-overlay/tests/. /tmp/strata-gpu/lib/tests/
fi
# The venv's python for ArrowCDeviceTest (it embeds that interpreter to import the export with pyarrow).
STRATA_JAVA_OPTS="-Dstrata.pyvenv=$(dirname "$(dirname "$py")")" \
  timeout 150 "$S" test io.strata.gpu.GpuShipperTest io.strata.sdk.loader.ArrowCDeviceTest > "$out/tests.log" 2>&1
echo "tests rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "tests (successful|failed|skipped|aborted)|✘|reason" "$out/tests.log" | head -20
d=/tmp/strata-gpu-data
rm -rf "$d"; mkdir -p "$d"
"$S" dataset generate --out "$d/ds" --rows "$rows" --features 10 --seed 1 > /dev/null 2>&1 || { echo "generate failed"; exit 1; }
"$S" promote --dataset "$d/ds" --ssd "$d/ssd" 2>&1 | tail -1
echo "data ready in $(( $(date +%s) - t0 )) s"
timeout 150 "$S" bench gpu --dataset "$d/ds" --ssd "$d/ssd" --batches 2000 --json > "$out/gpu.json" 2> "$out/gpu.err"
echo "bench gpu rc=$? in $(( $(date +%s) - t0 )) s"; cat "$out/gpu.json"; tail -3 "$out/gpu.err"
[ "${FEED:-1}" = 0 ] && exit 0
export STRATA_CLASSPATH="/tmp/strata-gpu/lib/*" STRATA_JAVA=/tmp/strata-gpu/rt/bin/java PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
timeout 200 "$py" bench/peers/gpu_feed.py "$d/ds" "$d/ssd" "$d/work" --seconds 9 --workers 4 --threads 4 --host-too \
  > "$out/feed.json" 2> "$out/feed.err"
echo "gpu_feed rc=$? in $(( $(date +%s) - t0 )) s"; cat "$out/feed.json"; tail -5 "$out/feed.err"
