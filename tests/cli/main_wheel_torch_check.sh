#!/usr/bin/env bash
# A wheel's programs run on the torch installed beside them (issue 43): site-packages/frugal/bin/
# frugal, with site-packages/torch/ of another release, says which torch it was built for and which
# is installed, and starts nothing (exit 1), where frugal-torch would have died on the loader's
# "undefined symbol". The same release (another patch) goes on to start frugal-torch. A build
# tree's frugal has no torch beside it and is not checked. --version names the torch built for.
source "$(dirname "$0")/lib/common.sh"
needs_commands frugal frugal-torch
keep_going
expect_exit "--version" 0 frugal --version
built=$(sed -n 's/^frugal [0-9.]* (built for torch \([0-9.]*\)[^)]*)$/\1/p' "$t/out")
check "...names the torch it was built for" '[[ -n $built ]]'
mm=$(echo "$built" | cut -d. -f1,2)

site=$t/site-packages
mkdir -p "$site/frugal/bin" "$site/torch"
cp "$(command -v frugal)" "$site/frugal/bin/frugal"
echo "__version__ = '9.99.0+cu999'" > "$site/torch/version.py"
expect_exit "another torch beside a wheel's frugal: refused" 1 "$site/frugal/bin/frugal" doctor
expect_msg "...naming both" "this frugal was built for torch $built, but the torch installed beside it is 9.99.0+cu999"
expect_msg "...and the way out" "pip install 'torch==$mm.*'"
echo "__version__ = '$mm.99+cu130'" > "$site/torch/version.py"
expect_exit "the same release: frugal-torch is started (none here)" 1 "$site/frugal/bin/frugal" doctor
expect_msg "...as it would be" "which could not be started"
expect_no_msg "...no torch complaint" "built for torch"
expect_exit "torch-free commands are not checked" 0 "$site/frugal/bin/frugal" --help
finish
