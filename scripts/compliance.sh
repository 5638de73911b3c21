#!/usr/bin/env bash
# Run the OpenResponses compliance suite (the open specification of the Responses API: its
# bin/compliance-test.ts, run with bun) against a fresh `rollout serve` on loopback.
#
#   scripts/compliance.sh SUITE_DIR [compliance-test.ts options, e.g. --model o4-mini --json]
#   OPENRESPONSES_DIR=SUITE_DIR scripts/compliance.sh [options]
#
# SUITE_DIR is a checkout of the suite; it is not part of this repository and is not fetched
# here. At run time only npm packages are installed, into $ROLLOUT_COMPLIANCE_CACHE (default
# ~/.cache/rollout-compliance): bun when it is not on PATH, and zod, the suite's one runtime
# dependency (linked as SUITE_DIR/node_modules when the checkout has none). The server runs from
# this repository (`python -m rollout.cli serve --port 0`, the instant profile) and stops when the
# suite ends. Exit code: the suite's (0 only when every test passed).
set -euo pipefail

suite="${OPENRESPONSES_DIR:-}"
if [[ $# -gt 0 && "$1" != -* ]]; then
    suite="$1"
    shift
fi
if [[ -z "$suite" || ! -f "$suite/bin/compliance-test.ts" ]]; then
    echo "usage: $0 SUITE_DIR [options] (or set OPENRESPONSES_DIR): SUITE_DIR must be a" \
        "checkout of the OpenResponses repository (with bin/compliance-test.ts)" >&2
    exit 2
fi
suite="$(cd "$suite" && pwd)"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${ROLLOUT_COMPLIANCE_CACHE:-$HOME/.cache/rollout-compliance}"
python="${PYTHON:-python}"
mkdir -p "$cache"

bun="$(command -v bun || true)"
if [[ -z "$bun" ]]; then
    if [[ ! -x "$cache/node_modules/.bin/bun" ]]; then
        npm install --prefix "$cache" --no-save --no-package-lock bun >&2
    fi
    bun="$cache/node_modules/.bin/bun"
fi

if [[ ! -e "$suite/node_modules/zod" ]]; then
    zod="$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["dependencies"]["zod"])' "$suite/package.json")"
    if [[ ! -e "$cache/node_modules/zod" ]]; then
        npm install --prefix "$cache" --no-save --no-package-lock --ignore-scripts "zod@$zod" >&2
    fi
    if [[ ! -e "$suite/node_modules" ]]; then
        ln -s "$cache/node_modules" "$suite/node_modules"
    fi
fi

log="$(mktemp)"
PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" "$python" -m rollout.cli serve \
    --host 127.0.0.1 --port 0 --log-level INFO 2>"$log" &
server=$!
cleanup() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -f "$log"
}
trap cleanup EXIT

url=""
for _ in $(seq 200); do
    url="$(sed -n 's|.*serving on \(http://127\.0\.0\.1:[0-9]*/v1\).*|\1|p' "$log" | head -n 1)"
    [[ -n "$url" ]] && break
    if ! kill -0 "$server" 2>/dev/null; then
        cat "$log" >&2
        exit 1
    fi
    sleep 0.1
done
if [[ -z "$url" ]]; then
    echo "the server did not start:" >&2
    cat "$log" >&2
    exit 1
fi

cd "$suite"
"$bun" run bin/compliance-test.ts --base-url "$url" --api-key rollout-compliance "$@"
