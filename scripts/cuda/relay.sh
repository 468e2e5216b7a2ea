#!/usr/bin/env bash
# A paper run in transit between lent GPU sessions (issue 18). A full 300k-step run takes
# longer than one session's device time, and its work folder (scripts/paper-run.sh's WORK:
# the checkpoint, hundreds of MB, the train log, the commands) must outlive the device
# machine, which starts bare each session and takes at most 64 MiB a call each way. So the
# folder travels in parts: packed on the device into parts of PART_MIB (default 10) MiB
# with a MANIFEST of their SHA-256 sums, sent back a batch of parts a call, collected here
# into a relay folder (RELAY, e.g. relay/fb15k-237-rocone-seed0, ignored by git), carried
# back a few parts a call in the next session, checked and unpacked, and trained on.
# Resume is bit-identical, so the pieces give the run one uninterrupted command would.
#
# The queries (WORK's train.arrow and test.arrow) do not travel: paper-run.sh samples
# them again (sampling is deterministic), and train refuses to resume on queries other
# than those its checkpoint was trained on. The binaries are packed once, as
# RELAY/bin.tar.xz with the run's settings (bin/RUN), and travel each session, so that
# every piece of the run is trained by the same build (unpack refuses others) and the
# same settings.
#
# Here (a machine with the repository, no GPU needed):
#   relay.sh init RELAY PACK DATASET MODEL SEED ENTRY  start RELAY with the binaries of
#                              PACK (device-step.sh --pack's bin/device-step.tar.xz: train,
#                              sample, rank, metrics, COMMIT) and the run's settings (those
#                              arguments and STEPS, DEVICE, SAMPLE and EXTRA, as paper-run.sh
#                              takes them), which travel with the binaries
#   relay.sh collect FROM RELAY  take a batch of parts that came back (the call's files
#                              folder) into RELAY.incoming, each checked; once every part
#                              is there and the whole checks, it replaces RELAY's parts
#   relay.sh status RELAY      what RELAY holds; exit 0 when its parts are complete
#   relay.sh plan RELAY        the calls that carry RELAY to the device: each call's carry
#                              list (within the working tree's 64 MiB) and its command
# On the device:
#   relay.sh receive FROM STAGE  move the carried files of RELAY (FROM) into STAGE, each
#                              checked against the MANIFEST (STAGE outlives the call on a
#                              warm machine; the repository's copy is replaced each call)
#   relay.sh unpack STAGE WORK  check every part and the whole, then restore WORK from them
#                              (refused when WORK already holds a checkpoint, or when
#                              BIN/COMMIT is not the commit the parts were trained by)
#   relay.sh pack WORK STAGE   WORK's state (all but the queries) into STAGE's parts and
#                              MANIFEST, replacing what STAGE held
#   relay.sh run STAGE OUT     one call's piece of the run: unpack the received parts into
#                              STAGE/work (unless it holds a checkpoint: a second piece on
#                              the same warm machine), then scripts/paper-run.sh with
#                              STAGE/bin and the run's settings for BUDGET seconds; then
#                              the entry, if training finished, as OUT/entry.tgz, else pack
#                              STAGE/work into STAGE/out and send its batch 0 into OUT
#   relay.sh send STAGE N OUT  batch N of STAGE's parts (BATCH parts, default what fits 63
#                              MiB and 7 files) and the MANIFEST into OUT; says how many
#                              batches there are
# Environment: PART_MIB (pack; the tests use PART_BYTES), BIN (unpack and pack: the
# binaries' folder, whose COMMIT the MANIFEST records; default bin), TREE_BYTES (plan: the
# working tree's size, default measured with git).
set -uo pipefail
export LC_ALL=C
me=relay
die() { echo "$me: $*" >&2; exit 1; }
usage() { sed -n '/^# Here/,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

mib=$((1024 * 1024))
limit=$((64 * mib)) # what a call carries (the working tree included) and brings back

# sha FILE: the file's SHA-256.
sha() { sha256sum "$1" | cut -d' ' -f1; }
# field MANIFEST KEY: the value of a "KEY VALUE" line.
field() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }
# parts MANIFEST: "NAME BYTES SHA" lines, in order.
parts() { awk '$1 ~ /^part-[0-9]+$/ { print $1, $2, $3 }' "$1"; }

# checkmanifest FILE: a MANIFEST this script wrote, whole (its last line says so).
checkmanifest() {
	[ -f "$1" ] || die "$1: no such file"
	head -1 "$1" | grep -qx 'rocone-relay 1' || die "$1: not a relay MANIFEST (its first line is not 'rocone-relay 1')"
	tail -1 "$1" | grep -qx 'end' || die "$1: cut short (no 'end' line)"
	local n
	n=$(parts "$1" | wc -l)
	if [ "$n" -eq 0 ] || [ "$n" != "$(field "$1" parts)" ]; then
		die "$1: lists $n parts where its 'parts' line says $(field "$1" parts)"
	fi
}

# checkpart MANIFEST FILE: FILE is the part of that name, bytes and sum.
checkpart() {
	local name want
	name=$(basename "$2")
	want=$(awk -v n="$name" '$1 == n { print $2, $3 }' "$1")
	[ -n "$want" ] || die "$2: not a part its MANIFEST lists"
	[ "$(stat -c %s "$2") $(sha "$2")" = "$want" ] || die "$2: its bytes or SHA-256 are not the MANIFEST's ($want): the part is damaged; fetch it again"
}

# complete DIR: every part of DIR's MANIFEST is in DIR and checks, and so does the whole.
complete() {
	local m=$1/MANIFEST name
	checkmanifest "$m"
	while read -r name _ _; do
		[ -f "$1/$name" ] || return 1
		checkpart "$m" "$1/$name"
	done < <(parts "$m")
	checkwhole "$1"
}

# checkwhole DIR: DIR's parts, each already checked, make the whole its MANIFEST names.
checkwhole() {
	local m=$1/MANIFEST name
	[ "$(parts "$m" | while read -r name _ _; do cat "$1/$name"; done | sha256sum | cut -d' ' -f1)" = "$(field "$m" sha256)" ] ||
		die "$1: the parts check one by one but not as a whole: the MANIFEST's sha256 line is not theirs"
}

# missing DIR: the parts of DIR's MANIFEST that DIR lacks.
missing() { parts "$1/MANIFEST" | while read -r name _ _; do [ -f "$1/$name" ] || echo "$name"; done; }

# batch MANIFEST: how many parts go in one call back (8 files and 64 MiB a call; one file
# is the MANIFEST, and 1 MiB is left to it).
batch() {
	local b=${BATCH:-$(((limit - mib) / $(field "$1" part_bytes)))}
	[[ $b =~ ^[0-9]+$ ]] || die "BATCH '$b': want a number"
	[ "$b" -gt 7 ] && b=7
	[ "$b" -ge 1 ] || die "$1: a part of $(field "$1" part_bytes) bytes does not fit one call"
	echo "$b"
}

cmd=${1:-}
[ $# -ge 1 ] && shift
case $cmd in
init)
	[ $# -eq 6 ] || usage
	relay=$1 pack=$2 ds=$3 model=$4 seed=$5 entry=$6
	[ -f "$pack" ] || die "$pack: no such file (scripts/cuda/device-step.sh --pack builds it)"
	[ -e "$relay" ] && die "$relay exists: a relay folder holds one run; choose another name"
	case $ds in fb15k-237 | nell-995) ;; *) die "dataset $ds: want fb15k-237 or nell-995" ;; esac
	[[ $seed =~ ^[0-9]+$ ]] || die "seed '$seed': want a number"
	[[ ${STEPS:-300001} =~ ^[0-9]+$ ]] || die "STEPS '${STEPS:-}': want a number"
	tmp=$(mktemp -d) || exit 1
	trap 'rm -rf "$tmp"' EXIT
	tar -C "$tmp" -xJf "$pack" || die "$pack: does not unpack"
	src=$tmp/device-step
	for f in COMMIT train sample rank metrics; do
		[ -f "$src/$f" ] || die "$pack: holds no device-step/$f"
	done
	mkdir -p "$tmp/bin" && cp "$src"/{COMMIT,train,sample,rank,metrics} "$tmp/bin/" || exit 1
	# The run's settings travel with the binaries, so that every piece trains the same run.
	printf 'dataset %s\nmodel %s\nseed %s\nentry %s\nsteps %s\ndevice %s\nsample %s\nextra %s\n' \
		"$ds" "$model" "$seed" "$entry" "${STEPS:-300001}" "${DEVICE:-cuda}" "${SAMPLE:-}" "${EXTRA:-}" >"$tmp/bin/RUN" || exit 1
	mkdir -p "$relay.tmp" && tar -C "$tmp" -cJf "$relay.tmp/bin.tar.xz" bin && mv "$relay.tmp" "$relay" || exit 1
	echo "$me: $relay holds the binaries of commit $(cat "$src/COMMIT") ($(stat -c %s "$relay/bin.tar.xz") bytes) and the run:"
	sed 's/^/  /' "$tmp/bin/RUN"
	;;

pack)
	[ $# -eq 2 ] || usage
	work=$1 stage=$2
	[ -s "$work/model.arrow" ] || die "$work: no checkpoint (model.arrow) to pack"
	part=${PART_BYTES:-$((${PART_MIB:-10} * mib))}
	[ "$part" -gt 0 ] 2>/dev/null || die "PART_BYTES or PART_MIB: want a positive number"
	new=$stage.packing
	rm -rf "$new" && mkdir -p "$new" || exit 1
	# Everything but the queries, which paper-run.sh samples again.
	(cd "$work" && find . -maxdepth 1 -type f ! -name train.arrow ! -name test.arrow -printf '%P\n' | sort) >"$new/files" || exit 1
	tar -C "$work" -cf - -T "$new/files" | split -a 3 -d -b "$part" - "$new/part-" || die "$work: does not pack"
	rm "$new/files"
	{
		echo 'rocone-relay 1'
		echo "commit $(cat "${BIN:-bin}/COMMIT" 2>/dev/null || echo unknown)"
		echo "part_bytes $part"
		echo "parts $(find "$new" -name 'part-*' | wc -l)"
		echo "bytes $(cat "$new"/part-* | wc -c)"
		echo "sha256 $(cat "$new"/part-* | sha256sum | cut -d' ' -f1)"
		for p in "$new"/part-*; do echo "$(basename "$p") $(stat -c %s "$p") $(sha "$p")"; done
		echo end
	} >"$new/MANIFEST.tmp" && mv "$new/MANIFEST.tmp" "$new/MANIFEST" || exit 1
	rm -rf "$stage" && mv "$new" "$stage" || exit 1
	n=$(field "$stage/MANIFEST" parts) b=$(batch "$stage/MANIFEST")
	echo "$me: packed $work into $n parts ($(field "$stage/MANIFEST" bytes) bytes), $(((n + b - 1) / b)) batches to send"
	;;

send)
	[ $# -eq 3 ] || usage
	stage=$1 n=$2 out=$3
	checkmanifest "$stage/MANIFEST"
	[[ $n =~ ^[0-9]+$ ]] || die "batch '$n': want a number"
	b=$(batch "$stage/MANIFEST") total=$(field "$stage/MANIFEST" parts)
	batches=$(((total + b - 1) / b))
	[ "$n" -lt "$batches" ] || die "batch $n: there are $batches (0 to $((batches - 1)))"
	mkdir -p "$out" && cp "$stage/MANIFEST" "$out/" || exit 1
	parts "$stage/MANIFEST" | sed -n "$((n * b + 1)),$((n * b + b))p" | while read -r name _ _; do
		checkpart "$stage/MANIFEST" "$stage/$name"
		cp "$stage/$name" "$out/" || exit 1
	done || exit 1
	echo "$me: batch $n of $batches (0 to $((batches - 1))) in $out"
	;;

collect)
	[ $# -eq 2 ] || usage
	from=$1 relay=$2
	[ -d "$relay" ] || die "$relay: no relay folder (relay.sh init makes one)"
	checkmanifest "$from/MANIFEST"
	in=$relay.incoming
	if [ -f "$relay/MANIFEST" ] && cmp -s "$from/MANIFEST" "$relay/MANIFEST"; then
		echo "$me: $relay already holds these parts" && exit 0
	fi
	if [ -f "$in/MANIFEST" ] && ! cmp -s "$from/MANIFEST" "$in/MANIFEST"; then
		# A newer pack: the parts of the one before it never all came, and never will.
		echo "$me: $in held parts of another pack ($(missing "$in" | wc -l) missing); starting again" >&2
		rm -rf "$in"
	fi
	mkdir -p "$in" && cp "$from/MANIFEST" "$in/MANIFEST" || exit 1
	for p in "$from"/part-*; do
		[ -e "$p" ] || continue
		checkpart "$in/MANIFEST" "$p"
		cp "$p" "$in/" || exit 1
	done
	left=$(missing "$in" | wc -l)
	if [ "$left" -gt 0 ]; then
		echo "$me: $in: $left of $(field "$in/MANIFEST" parts) parts still to come"
		exit 0
	fi
	checkwhole "$in" # each part was checked as it came
	# The run's one copy: the old parts go only once the new ones are all here and whole.
	cp "$relay/bin.tar.xz" "$in/" && mv "$relay" "$relay.old" && mv "$in" "$relay" && rm -rf "$relay.old" || exit 1
	echo "$me: $relay complete: $(field "$relay/MANIFEST" parts) parts, $(field "$relay/MANIFEST" bytes) bytes, commit $(field "$relay/MANIFEST" commit)"
	;;

status)
	[ $# -eq 1 ] || usage
	relay=$1
	[ -d "$relay" ] || die "$relay: no relay folder"
	[ -f "$relay/bin.tar.xz" ] || die "$relay: no bin.tar.xz (relay.sh init makes it)"
	if [ ! -f "$relay/MANIFEST" ]; then
		echo "$me: $relay holds the binaries only: a run's first session (paper-run.sh on an empty WORK)"
		exit 1
	fi
	checkmanifest "$relay/MANIFEST"
	left=$(missing "$relay" | wc -l)
	[ "$left" -eq 0 ] || { echo "$me: $relay lacks $left parts: $(missing "$relay" | tr '\n' ' ')"; exit 1; }
	complete "$relay" || exit 1
	echo "$me: $relay complete: $(field "$relay/MANIFEST" parts) parts, $(field "$relay/MANIFEST" bytes) bytes, commit $(field "$relay/MANIFEST" commit)"
	[ -d "$relay.incoming" ] && echo "$me: $relay.incoming holds $(find "$relay.incoming" -name 'part-*' | wc -l) parts of a newer pack"
	exit 0
	;;

plan)
	[ $# -eq 1 ] || usage
	relay=${1%/}
	[ -f "$relay/bin.tar.xz" ] || die "$relay: no bin.tar.xz (relay.sh init makes it)"
	# carry takes paths in the repository, which git ignores.
	root=$(cd "$(dirname "$0")/../.." && pwd -P)
	rel=$(realpath -m --relative-to="$root" "$relay")
	case $rel in
	.. | ../*) echo "$me: $relay is outside the repository ($root): carry cannot take it; move it to relay/ there" >&2 ;;
	*)
		relay=$rel
		git -C "$root" check-ignore -q "$relay/bin.tar.xz" ||
			echo "$me: git does not ignore $relay: carry takes ignored paths alone (relay/ is ignored)" >&2
		;;
	esac
	if [ "${relay#/}" = "$relay" ]; then cd "$root" || exit 1; fi
	tree=${TREE_BYTES:-$( (
		cd "$(dirname "$0")/../.." &&
			{ git ls-files -z; git ls-files -z -o --exclude-standard; } | xargs -0 -r stat -c %s -- 2>/dev/null
	) | awk '{ s += $1 } END { print s + 0 }')}
	room=$((limit - tree - mib)) # a MiB's margin for what changes before the call
	files=("$relay/bin.tar.xz")
	if [ -f "$relay/MANIFEST" ]; then
		complete "$relay" || die "$relay: incomplete (relay.sh status says what lacks)"
		while read -r name _ _; do files+=("$relay/$name"); done < <(parts "$relay/MANIFEST")
	fi
	echo "$me: the working tree takes $tree bytes of a call's $limit; each call below carries what fits the rest"
	echo "$me: make the calls one after the other (the device machine stays warm 30 s), each with timeout_s 600"
	groups=() call=() used=0
	group() {
		local f g=
		for f in "${call[@]}"; do g+=${g:+,}\"$f\"; done
		groups+=("[$g]")
		call=() used=0
	}
	# The MANIFEST rides with every call, so that each receive checks its parts.
	m=0
	[ -f "$relay/MANIFEST" ] && m=$(stat -c %s "$relay/MANIFEST")
	for f in "${files[@]}"; do
		s=$(stat -c %s "$f")
		[ $((s + m)) -le "$room" ] || die "$f: $s bytes do not fit a call beside the working tree"
		if [ $((used + s + m)) -gt "$room" ] || [ ${#call[@]} -ge 7 ]; then
			[ "$m" -gt 0 ] && call+=("$relay/MANIFEST")
			group
		fi
		call+=("$f") used=$((used + s))
	done
	[ "$m" -gt 0 ] && call+=("$relay/MANIFEST")
	group
	stage=/tmp/rocone-relay
	for k in "${!groups[@]}"; do
		cmd="scripts/cuda/relay.sh receive $relay $stage"
		[ "$k" -eq $((${#groups[@]} - 1)) ] && cmd+=" && BUDGET=${BUDGET:-480} scripts/cuda/relay.sh run $stage \$OUT"
		printf 'call %d: carry %s\n        command: %s\n' $((k + 1)) "${groups[$k]}" "$cmd"
	done
	printf 'then, for N = 1 to B-1 (the run says "batch 0 of B"), one call each, and here after each call\n'
	printf '  relay.sh collect FILES_AT %s (the call'"'"'s files folder):\n' "$relay"
	printf '        command: scripts/cuda/relay.sh send %s/out N %s\n' "$stage" "\$OUT"
	printf 'or, where the run says the entry is in entry.tgz: tar -C DIR -xzf FILES_AT/entry.tgz (DIR: the folder it names)\n'
	printf 'then, once every batch is here (relay.sh status: complete), device time left trains a second piece on the warm machine, carrying nothing:\n'
	printf '        command: BUDGET=SECONDS scripts/cuda/relay.sh run %s %s\n' "$stage" "\$OUT"
	printf '  and its batches come back as above (SECONDS: what is left, less the sends and a minute)\n'
	;;

receive)
	[ $# -eq 2 ] || usage
	from=${1%/} stage=$2
	mkdir -p "$stage" || exit 1
	if [ -f "$from/MANIFEST" ]; then
		checkmanifest "$from/MANIFEST"
		if [ -f "$stage/MANIFEST" ] && ! cmp -s "$from/MANIFEST" "$stage/MANIFEST"; then
			die "$from/MANIFEST is not the MANIFEST of the parts $stage already holds: two relays mixed"
		fi
		cp "$from/MANIFEST" "$stage/" || exit 1
	fi
	got=0
	for p in "$from"/part-*; do
		[ -e "$p" ] || continue
		[ -f "$stage/MANIFEST" ] || die "$p: came without its MANIFEST"
		checkpart "$stage/MANIFEST" "$p"
		mv "$p" "$stage/" || exit 1
		got=$((got + 1))
	done
	if [ -f "$from/bin.tar.xz" ]; then
		mv "$from/bin.tar.xz" "$stage/" || exit 1
		rm -rf "${stage:?}/bin"
		tar -C "$stage" -xJf "$stage/bin.tar.xz" || die "$from/bin.tar.xz: does not unpack"
		echo "$me: the binaries of commit $(cat "$stage/bin/COMMIT") in $stage/bin"
	fi
	if [ -f "$stage/MANIFEST" ]; then
		echo "$me: $got parts received; $stage lacks $(missing "$stage" | wc -l) of $(field "$stage/MANIFEST" parts)"
	fi
	;;

unpack)
	[ $# -eq 2 ] || usage
	stage=$1 work=$2
	[ -e "$work/model.arrow" ] && die "$work already holds a checkpoint: unpacking would replace it"
	checkmanifest "$stage/MANIFEST"
	left=$(missing "$stage" | wc -l)
	[ "$left" -eq 0 ] || die "$stage lacks $left parts: $(missing "$stage" | tr '\n' ' ')"
	complete "$stage" || exit 1
	was=$(field "$stage/MANIFEST" commit) now=$(cat "${BIN:-bin}/COMMIT" 2>/dev/null || echo unknown)
	[ "$was" = "$now" ] || die "the parts were trained by commit $was's binaries, ${BIN:-bin} holds $now's: resume with the relay's own bin.tar.xz"
	mkdir -p "$work" || exit 1
	parts "$stage/MANIFEST" | while read -r name _ _; do cat "$stage/$name"; done | tar -C "$work" -xf - || die "$stage: the parts do not unpack"
	echo "$me: $work restored from $(field "$stage/MANIFEST" parts) parts, commit $was"
	;;

run)
	[ $# -eq 2 ] || usage
	stage=${1%/} out=$2
	if [ ! -f "$stage/bin/COMMIT" ] || [ ! -f "$stage/bin/RUN" ]; then
		die "$stage/bin: no binaries or RUN (the first call's receive unpacks bin.tar.xz there)"
	fi
	setting() { awk -v k="$1" '$1 == k { sub(/^[^ ]+ ?/, ""); print; exit }' "$stage/bin/RUN"; }
	export BIN=$stage/bin STEPS DEVICE SAMPLE EXTRA
	STEPS=$(setting steps) DEVICE=$(setting device) SAMPLE=$(setting sample) EXTRA=$(setting extra)
	entry=$(setting entry) work=$stage/work
	if [ ! -e "$work/model.arrow" ] && [ -f "$stage/MANIFEST" ]; then
		"$0" unpack "$stage" "$work" || exit 1
	fi
	"$(dirname "$0")/../paper-run.sh" "$(setting dataset)" "$(setting model)" "$(setting seed)" "$work" "$entry" ||
		die "paper-run.sh failed; $work is as it left it"
	mkdir -p "$out" || exit 1
	if [ -f "$entry/run.json" ]; then
		tar -C "$(dirname "$entry")" -czf "$out/entry.tgz" "$(basename "$entry")" || exit 1
		echo "$me: the entry is in $out/entry.tgz: unpack it into $(dirname "$entry") here"
		exit 0
	fi
	"$0" pack "$work" "$stage/out" && "$0" send "$stage/out" 0 "$out"
	;;

*) usage ;;
esac
