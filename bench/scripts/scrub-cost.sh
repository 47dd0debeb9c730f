#!/bin/bash
# The cost of a node's background scrub (docs/RELIABILITY.md): node CPU per wall second with the
# checksum scrub at 32 MiB/s, 128 MiB/s and off, on an idle node whose SSD tier holds a promoted
# 3 M-row dataset. Run with STRATA_JAVA_OPTS=-Dstrata.scrub.minPassMillis=0 so that passes run back
# to back at the rate (a small tier is otherwise re-read once a minute). Usage: scrub-cost.sh [DIR]
set -e
S=$(cd "$(dirname "$0")/../.." && pwd)/strata
B=${1:-${TMPDIR:-/tmp}/strata-scrub-cost}; mkdir -p $B/hdd
[ -d $B/hdd/ev ] || $S dataset generate --out $B/hdd/ev --rows 3000000 --features 10 >/dev/null 2>&1
for rate in 33554432 134217728 0; do
  rm -rf $B/home
  cat > $B/node.json <<J
{"home": "$B/home", "hddRoots": ["$B/hdd"], "port": 7272, "ssdBudget": "8g", "scrubBytesPerSecond": $rate}
J
  $S node start --foreground --config $B/node.json > $B/node.log 2>&1 &
  pid=$!
  sleep 8
  $S dataset register $B/hdd/ev --node http://127.0.0.1:7272 >/dev/null
  $S promote --dataset ev --node http://127.0.0.1:7272 >/dev/null
  sleep 20
  cpu0=$(awk '{print $14+$15}' /proc/$pid/stat); t0=$(date +%s.%N)
  sleep 30
  cpu1=$(awk '{print $14+$15}' /proc/$pid/stat); t1=$(date +%s.%N)
  st=$(curl -s http://127.0.0.1:7272/v1/tiers | python3 -c "import json,sys;d=json.load(sys.stdin)['ssd'];print(d['residentBytes'],d['scrubbedBytes'],d['scrubPasses'])")
  echo "rate=$rate cpu_per_s=$(python3 -c "print(($cpu1-$cpu0)/100/($t1-$t0))") resident,scrubbed,passes=$st"
  kill $pid; wait $pid || true
done
