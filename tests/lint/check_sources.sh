#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The repository's own rules that a compiler cannot check: no product source file over 800 lines, no product
# function over 120 lines, a licence line in every source file, and no source line that points at a document
# the repository does not hold (a spec section, an article by number, an issue number). Run by ctest as
# tst_sources_layout.
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"
status=0
while IFS= read -r file; do
  lines=$(wc -l <"$file")
  if ((lines > 800)); then
    echo "$file: $lines lines (at most 800)"
    status=1
  fi
done < <(find core ui app -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.inc' \))
# No product function over 120 lines, measured as universal-ctags measures it (first to last line, lambdas
# inside counted with their function). Without ctags the rule cannot be checked, which is a failure: setup.sh
# installs it.
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "universal-ctags is not installed (apt-get install universal-ctags): function lengths not checked"
  status=1
else
  long=$(ctags -R --languages=C++ --langmap=C++:+.inc --kinds-C++=f --fields=+ne -f - core ui app |
    awk -F'\t' '$1 !~ /^__anon/ {
      line = end = 0
      for (i = 4; i <= NF; ++i) {
        if ($i ~ /^line:/) line = substr($i, 6)
        if ($i ~ /^end:/) end = substr($i, 5)
      }
      if (end && end - line + 1 > 120) printf "%s: %s is %d lines (at most 120)\n", $2, $1, end - line + 1
    }')
  if [[ -n $long ]]; then
    echo "$long"
    status=1
  fi
fi
# Every source file says its licence in its first lines.
while IFS= read -r file; do
  if ! head -n 3 "$file" | grep -q 'SPDX-License-Identifier: GPL-3.0-or-later'; then
    echo "$file: no SPDX-License-Identifier line in its first three lines"
    status=1
  fi
done < <(find core ui app tests -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.inc' -o -name '*.py' \
           -o -name '*.sh' -o -name 'CMakeLists.txt' -o -name '*.cmake' \) -not -path 'tests/fuzz/corpus/*')
if grep -rnEi --include='*.cpp' --include='*.h' --include='*.inc' --include='*.py' --include='CMakeLists.txt' \
     -e 'spec(ification)? section|the spec\b|\bseed 0[0-9][0-9]\b|\bissue #?[0-9]+' -e "spec's" core ui app tests --exclude-dir=lint; then
  echo "the lines above cite a document outside the repository: say it in the comment or point into docs/"
  status=1
fi
((status == 0)) && echo "sources: file and function sizes and references as the repository's rules ask"
exit "$status"
