#!/usr/bin/env bash
# Fails if a tracked C/C++ file differs from what clang-format makes of it (.clang-format at the root).
#   bash tools/check-format.sh        # check, listing the files to fix
#   bash tools/check-format.sh fix    # rewrite them
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.c' '*.h')
if [ "${1:-check}" = fix ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "not formatted (bash tools/check-format.sh fix): ${bad[*]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files as .clang-format says"
