#!/usr/bin/env bash
# The code is laid out as .clang-format says (clang-format-14): every tracked C++ file under src/,
# include/, tools/, python/, tests/, bench/ and fuzz/. Lists the files that differ and exits 1; `--fix`
# formats them in place instead. Run by ctest as house.format.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format-14 >/dev/null || { echo "check_format: clang-format-14 not installed (scripts/setup.sh installs it)"; exit 77; }
mapfile -t files < <(git ls-files 'src/**' 'include/**' 'tools/**' 'python/**' 'tests/**' 'bench/**' 'fuzz/**' |
  grep -E '\.(cpp|h|hpp|cu|cuh)$' || true)
[ ${#files[@]} -gt 0 ] || { echo "check_format: no files (not a git checkout?)"; exit 77; }
if [ "${1:-}" = --fix ]; then
  clang-format-14 -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format-14 --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not formatted: %s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} of ${#files[@]} files differ from .clang-format; scripts/check_format.sh --fix formats them"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
