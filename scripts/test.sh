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
run_phase vitest npx vitest run --reporter=default --reporter=json --outputFile.json=test/artifacts/vitest-report.json "$@"
