#!/usr/bin/env bash
# Records the upgrade fixture of UpgradeTest: a data directory written by a release, through its
# own HTTP API, on a manual clock. Run from the repository root with that release's jar built:
#   bash src-test/src/test/resources/upgrade/record-0.1.sh http-api/target/gpushare.jar OUT_DIR
# It writes OUT_DIR (the data directory, without its admin token) and OUT_DIR-views.jsonl.
# The fixture beside this script (journal-44fda3f/, views-44fda3f.jsonl) was written by commit
# 44fda3f, the last release whose GPU actors kept ledgers and whose pod actors journaled every status.
set -euo pipefail
jar=$1
out=$2
rm -rf "$out" && mkdir -p "$out"
port=$((20000 + RANDOM % 20000))
java -jar "$jar" --port "$port" --data "$out" --clock manual >"$out.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  grep -q "gpushare listening" "$out.log" && break
  sleep 0.5
done
API=http://127.0.0.1:$port
auth=(-H "Authorization: Bearer $(cat "$out/admin-token")")
call() { curl -sf "${auth[@]}" "$@"; echo; }
node() { # NAME POLICY GPUS [QOS]
  call -X PUT "$API/v1/nodes/$1" -H 'Content-Type: application/json' -d "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\",
    \"labels\":{\"alibabacloud.com/gpu-share-policy\":\"$2\"},
    \"annotations\":{\"alibabacloud.com/gpu-share-qos-config\":\"${4:-{\}}\"}},
    \"status\":{\"capacity\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"nvidia.com/gpu\":\"$3\"}}}"
}
pod() { # NODE POLICY NAME REQUEST LIMIT
  call -X POST "$API/v1/pods" -H 'Content-Type: application/json' -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$3\",
    \"labels\":{\"alibabacloud.com/compute-class\":\"gpu-hpn\",\"alibabacloud.com/gpu-share-policy\":\"$2\"}},
    \"spec\":{\"nodeName\":\"$1\",\"containers\":[{\"name\":\"main\",\"resources\":{
    \"requests\":{\"alibabacloud.com/gpu-core.percentage\":$4,\"alibabacloud.com/gpu-memory.percentage\":$4},
    \"limits\":{\"alibabacloud.com/gpu-core.percentage\":$5,\"alibabacloud.com/gpu-memory.percentage\":$5}}}]}}"
}
demand() { call -X POST "$API/v1/namespaces/default/pods/$1/demand"; }
release() { call -X DELETE "$API/v1/namespaces/default/pods/$1/demand"; }

# SPEC §5 at T1, on a node that preempts after 60 minutes.
node demo share-pool 2 '{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 60}'
pod demo share-pool a 50 50; pod demo share-pool b 50 50
pod demo share-pool c 50 100; pod demo share-pool d 50 100
demand a; demand c; demand d; demand b
# On a second node: a pod that runs, one that ran and released, one that withdrew, one deleted.
node spare share-pool 1
pod spare share-pool e 30 30; demand e; pod spare share-pool r 30 30; demand r; release r
pod spare share-pool f 10 80; demand f; release f
pod spare share-pool gone 10 10; call -X DELETE "$API/v1/namespaces/default/pods/gone"
# 61 minutes later the head (d, limit 100) preempts the longest-running pods of one GPU.
call -X POST "$API/v1/clock/advance" -H 'Content-Type: application/json' -d '{"seconds":3660}'
# The static model: two pinned, one that no single GPU has room for.
node fixed static 2
pod fixed static s1 60 60; pod fixed static s2 60 60; pod fixed static s3 60 60
# What that release showed, for UpgradeTest to compare with (views-<commit>.jsonl).
for view in nodes/demo nodes/fixed nodes/spare pods; do call "$API/v1/$view"; done >"$out-views.jsonl"
kill -TERM $server
wait $server || true
trap - EXIT
rm -f "$out/admin-token"
echo "recorded $out"
