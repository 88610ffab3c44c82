#!/usr/bin/env bash
# scripts/drain-instructions.sh KIND [W] [N] [PERF_DIR]: instructions per delivery of a draining worker,
# counted by valgrind's callgrind over N deliveries after W of warm-up (V8 must have optimised the hot code
# first: 4,000 is enough, 500 is not). KIND is `service` (ROLE=worker, one target, concurrency 10) or `raw`
# (the outside yardstick's raw-worker.cjs); the backlog shape, the sink and the receiver are the outside
# yardstick's (PERF_DIR, default ../shared/perf). Run from the project root after `npm run build`. Under
# valgrind the worker is about 50 times slower, so batching differs from full speed: compare counts with
# counts. XENV: more VAR=value settings for the service's worker. IR_KEEP=FILE keeps the dump for
# callgrind_annotate. bench/instructions.ts counts the receiver the same way.
set -u
proj=$(pwd); kind=$1; W=${2:-4000}; N=${3:-2000}; here=$(cd "${4:-../shared/perf}" && pwd)
tmp=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
rport=$(port); kport=$(port); sport=$(port); aport=$(port); aport2=$(port)
setsid redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 & pids+=($!)
setsid node "$here/sink.cjs" "$kport" & pids+=($!)
for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
secret="whsec_$(head -c 24 /dev/urandom | base64)"
cat > "$tmp/config.json" <<JSON
{"retention":{"completed":{"ageSeconds":1,"count":1}},"targets":[{"name":"sink","url":"http://127.0.0.1:$kport/hook","events":["*"],"secret":"$secret","concurrency":10,"format":"standard"}]}
JSON
node "$here/gen.cjs" $((W+N)) "$tmp/all.jsonl" "$tmp"; head -n "$W" "$tmp/all.jsonl" > "$tmp/w.jsonl"; tail -n "$N" "$tmp/all.jsonl" > "$tmp/n.jsonl"
common=(PLATFORM_PUBLIC_KEYS="$(cat "$tmp/platform_pub.b64")" CONFIG_FILE="$tmp/config.json" QUEUE_PREFIX=dx REDIS_URL="redis://127.0.0.1:$rport" LOG_LEVEL=info NODE_ENV=production)
(cd "$proj" && exec env "${common[@]}" PORT=$sport ADMIN_PORT=$aport ROLE=receiver setsid node dist/src/main.js >>"$tmp/recv.log" 2>&1) & pids+=($!)
for _ in $(seq 150); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.2; done
VG=(valgrind --tool=callgrind --instr-atstart=no --smc-check=all-non-file --error-limit=no --callgrind-out-file="$tmp/cg.out")
if [ "$kind" = service ]; then
  (cd "$proj" && exec env "${common[@]}" ${XENV:-} PORT=0 ADMIN_PORT=$aport2 ROLE=worker USER=vg HOST=vg setsid "${VG[@]}" node dist/src/main.js >>"$tmp/worker.log" 2>&1) & w=$!
else
  (NODE_PATH="$proj/node_modules" USER=vg HOST=vg exec setsid "${VG[@]}" node "$here/raw-worker.cjs" "redis://127.0.0.1:$rport" dx "http://127.0.0.1:$kport/hook" "$secret" >>"$tmp/worker.log" 2>&1) & w=$!
fi
pids+=($w)
n() { curl -s "http://127.0.0.1:$kport/stats" | python3 -c 'import sys,json;print(json.load(sys.stdin)["n"])'; }
waitn() { for _ in $(seq 6000); do [ "$(n)" -ge "$1" ] && return 0; sleep 0.2; done; echo "timeout at $(n) of $1"; exit 1; }
node "$here/send-once.cjs" "http://127.0.0.1:$sport" "$tmp/w.jsonl" 32 >/dev/null
waitn "$W"; sleep 1
# valgrind names its control pipes after USER and HOST: the same two for callgrind_control.
USER=vg HOST=vg callgrind_control --instr=on "$w" >/dev/null
node "$here/send-once.cjs" "http://127.0.0.1:$sport" "$tmp/n.jsonl" 32 >/dev/null
waitn $((W+N))
USER=vg HOST=vg callgrind_control --dump "$w" >/dev/null; sleep 1
tot=0; for f in "$tmp"/cg.out*; do t=$(grep -E '^(summary|totals):' "$f" | head -1 | awk '{print $2}'); [ -n "$t" ] && tot=$((tot+t)); done
[ -n "${IR_KEEP:-}" ] && cp "$tmp"/cg.out.1 "$IR_KEEP"; echo "$kind: $((tot / N)) instructions per delivery over $N (after $W)"
