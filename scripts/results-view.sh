# Helpers of the scripts that write views of the paper suite's results
# (make-planners-doc.sh, make-mars-doc.sh); sourced with $results set to
# the results file (dplace bench -o).

# A string field of the results file ("command", "started_utc").
field() { sed -n "s/^ \"$1\": \"\(.*\)\",*$/\1/p" "$results" | head -1; }

# The commands that continued the run (bench --resume), one per line,
# without their --markdown file.
resumed_commands() {
  sed -n '/^ "resumed_commands": \[/,/^ \]/s/^  "\(.*\)",*$/\1/p' "$results" |
    sed 's/ --markdown [^ ]*//'
}

# " (continued N times, the last by `COMMAND`)", or nothing when no
# command continued the run.
continued() {
  local commands n last
  commands=$(resumed_commands)
  [ -n "$commands" ] || return 0
  n=$(wc -l <<<"$commands")
  last=$(tail -1 <<<"$commands")
  if [ "$n" -eq 1 ]; then
    printf ' (continued once, by `%s`)' "$last"
  else
    printf ' (continued %d times, the last by `%s`)' "$n" "$last"
  fi
}

# Of the benchmarks "a b c" and the columns "x|y|z", those the results hold
# (an unfinished run may lack some): models one per word, labels joined
# with commas for --methods.
held=$(sed -n '/^ "tables": \[/,$p' "$results")  # The runs, not the definition.
present_models() {
  for m in $1; do
    if grep -qF "\"name\": \"$m\"" <<<"$held"; then echo "$m"; fi
  done
}
present_labels() {
  local out="" label
  IFS='|' read -ra labels <<<"$1"
  for label in "${labels[@]}"; do
    if grep -qF "\"label\": \"$label\"" <<<"$held"; then
      out+="${out:+,}$label"
    fi
  done
  echo "$out"
}
