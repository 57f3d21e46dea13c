#!/usr/bin/env bash
# A user saves the machine report: `frugal doctor > report.txt` writes the report into the file
# (it is the output asked for, so stdout, terminal or not); stderr stays empty.
source "$(dirname "$0")/lib/common.sh"
needs_commands frugal frugal-torch
keep_going
cd "$t"
frugal doctor >report.txt 2>err.txt
check "exit 0" '[ $? -eq 0 ]'
check "the report is in the file" 'grep -q "^CPU " report.txt && grep -q "^LibTorch " report.txt'
check "nothing on stderr" '[ ! -s err.txt ]'
frugal doctor --json >report.json 2>/dev/null
expect_json "--json is still one document on stdout" '"cpu" in d' "$t/report.json"
finish
