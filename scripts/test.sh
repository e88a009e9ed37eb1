#!/usr/bin/env bash
# `pnpm test`: lint and format check, typecheck of every package, then the whole vitest suite; prints how long each
# phase took, and the 15 slowest test files (vitest's JSON report, kept in test/artifacts/vitest-report.json).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

phases=()
run_phase() {
  local name="$1"
  shift
  local started=$SECONDS
  "$@"
  local status=$?
  phases+=("$(printf '%-10s %5d s  exit %d' "$name" $((SECONDS - started)) "$status")")
  return $status
}

summary() {
  printf '\n[test] phase timings\n'
  printf '[test]   %s\n' "${phases[@]}"
  if [ -f test/artifacts/vitest-report.json ]; then
    node scripts/slowest-files.mjs test/artifacts/vitest-report.json 15 | sed 's/^/[test]   /'
  fi
}
trap summary EXIT

mkdir -p test/artifacts
run_phase biome npx biome ci --reporter=summary . || exit 1
run_phase typecheck pnpm -r --workspace-concurrency=1 run typecheck || exit 1
# A bound on the whole suite (a full run takes 20-40 min here): a test process that hangs for good (a deadlock, as Node
# 20's JWK export once caused) then fails the run with a reason instead of running into CI's own limit silently.
limit_s="${ARK_TEST_LIMIT_S:-3600}"
run_phase vitest timeout --kill-after=30s "$limit_s" npx vitest run --reporter=default --reporter=json --outputFile.json=test/artifacts/vitest-report.json "$@"
status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  printf '\n[test] vitest ran past %s s (ARK_TEST_LIMIT_S) and was stopped: a test process hung. The test files with no\n' "$limit_s"
  printf '[test] result line above are the ones that never finished.\n'
fi
exit "$status"
