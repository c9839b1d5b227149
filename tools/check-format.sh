#!/usr/bin/env bash
# Fails if a C/C++ file of the tree differs from what clang-format makes of it (.clang-format at the
# root): tracked files and new ones git does not ignore, so that a file not yet added is fixed and
# checked before it lands (CI checks the commit, where it is tracked).
#   bash tools/check-format.sh        # check, listing the files to fix
#   bash tools/check-format.sh fix    # rewrite them
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.c' '*.h')
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
