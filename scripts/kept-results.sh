# Helpers of the scripts that keep the results a generated document is
# made from in docs/results-data/ (make-fidelity-doc.sh,
# make-learning-doc.sh, make-mars-doc.sh); sourced.

# kept_unpack KEPT DIR WHAT: DIR holds what KEPT holds and nothing else;
# without KEPT, says so (WHAT: what it would hold) and exits 1.
kept_unpack() {
  if [ ! -f "$1" ]; then
    echo "$1: no kept $3 (RUN=yes makes them and keeps them there)" >&2
    exit 1
  fi
  rm -rf "$2" && mkdir -p "$2"
  tar -xzf "$1" -C "$2"
}

# kept_pack KEPT DIR PATTERN...: the files of DIR the patterns name (glob
# patterns, expanded in DIR) into KEPT, the same bytes for the same files
# (sorted, without times or owners).
kept_pack() {
  local kept=$1 dir=$2
  shift 2
  # shellcheck disable=SC2068  # The patterns expand in $dir.
  (cd "$dir" && tar --sort=name --mtime=@0 --owner=0 --group=0 \
     --numeric-owner -cf - $@) | gzip -9n >"$kept.tmp"
  mv "$kept.tmp" "$kept"
}
