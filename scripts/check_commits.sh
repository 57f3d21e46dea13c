#!/usr/bin/env bash
# Commit messages since the rule began (CONTRIBUTING.md, "Commits"): a subject of at most 72
# characters, then a blank line before the body, so `git log --oneline` reads as a list. Commits
# before FRUGAL_COMMITS_BASE (the last commit written under the old habit) are history and left
# alone. Run by `make test` as house.commits; exit 77 (skipped) outside a git checkout.
#   scripts/check_commits.sh [BASE]      BASE: a commit (default: the rule's first base below)
set -uo pipefail
cd "$(dirname "$0")/.."
base=${1:-${FRUGAL_COMMITS_BASE:-5f53135}}
git rev-parse --git-dir >/dev/null 2>&1 || { echo "check_commits: not a git checkout; skipped"; exit 77; }
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "check_commits: base $base is not in this clone (a shallow clone?); skipped"
  exit 77
fi
bad=0
while read -r sha; do
  subject=$(git log -1 --format=%s "$sha")
  second=$(git log -1 --format=%B "$sha" | sed -n 2p)
  if [ ${#subject} -gt 72 ]; then
    echo "check_commits: ${sha:0:10}: subject of ${#subject} characters (at most 72): ${subject:0:72}…"
    bad=1
  fi
  if [ -n "$second" ]; then
    echo "check_commits: ${sha:0:10}: the second line must be blank (subject, blank line, body)"
    bad=1
  fi
done < <(git rev-list --no-merges "$base..HEAD")
n=$(git rev-list --count --no-merges "$base..HEAD")
if [ $bad -ne 0 ]; then
  echo "check_commits: fix with git rebase -i $base (reword); subject <= 72 characters, details in the body"
  exit 1
fi
echo "check_commits: $n commit(s) since $base, every subject <= 72 characters"
