#!/usr/bin/env bash
# Every ctest label of this build tree is named, in backquotes, in README's "ctest labels:"
# paragraph. Usage: readme_labels.sh CTEST BUILD_DIR README.md
set -euo pipefail
ctest=$1 build=$2 readme=$3
paragraph=$(awk '/^ctest labels:/{on=1} on&&/^$/{exit} on' "$readme")
[[ -n $paragraph ]] || { echo "README.md has no 'ctest labels:' paragraph"; exit 1; }
status=0
while read -r label; do
  [[ -z $label ]] && continue
  if [[ $paragraph != *"\`$label\`"* ]]; then
    echo "ctest label '$label' is not in README.md's list of ctest labels"
    status=1
  fi
done < <("$ctest" --test-dir "$build" --print-labels | sed -n 's/^  //p')
exit $status
