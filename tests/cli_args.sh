#!/usr/bin/env bash
# The ffnrt command's arguments, as a hostile user types them, without
# devices (every case is refused before a context is made): numbers are
# whole and in range or refused with exit 2 and a message naming them;
# help asked for goes to stdout with exit 0; unknown commands and options
# are refused; "--" ends the options in every command.
# Usage: cli_args.sh path/to/ffnrt [path/to/example_gguf_ffn]
set -u
ffnrt=${1:?usage: cli_args.sh path/to/ffnrt [path/to/example_gguf_ffn]}
example_gguf=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { # description, expected exit status, text expected on stdout (or ""), text on stderr (or ""), command...
    local what=$1 want=$2 out=$3 err=$4
    shift 4
    "$@" >"$dir/out" 2>"$dir/err"
    local got=$?
    if [ "$got" != "$want" ] || { [ -n "$out" ] && ! grep -q -- "$out" "$dir/out"; } ||
       { [ -n "$err" ] && ! grep -q -- "$err" "$dir/err"; }; then
        echo "FAIL: $what: exit $got (expected $want)"
        echo "stdout:"; cat "$dir/out"; echo "stderr:"; cat "$dir/err"
        fail=1
    else
        echo "ok: $what"
    fi
}

check "--help: usage on stdout, exit 0" 0 "usage: ffnrt COMMAND" "" "$ffnrt" --help
check "-h too" 0 "usage: ffnrt COMMAND" "" "$ffnrt" -h
check "no command: usage on stderr, exit 2" 2 "" "usage: ffnrt COMMAND" "$ffnrt"
check "an unknown command" 2 "" "unknown command frobnicate" "$ffnrt" frobnicate
check "devices --bogus refused" 2 "" "unexpected argument --bogus" "$ffnrt" devices --bogus
check "devices --help" 0 "usage: ffnrt devices" "" "$ffnrt" devices --help
check "plan --help on stdout" 0 "usage: ffnrt plan" "" "$ffnrt" plan --help
check "plan --help lists every setting's variable (the library's list)" 0 "FFNRT_GEMM_BLOCK" "" "$ffnrt" plan --help
check "bench --help on stdout" 0 "usage: ffnrt bench" "" "$ffnrt" bench --help
check "check --matrix --help on stdout" 0 "usage: ffnrt check --matrix" "" "$ffnrt" check --matrix --help
check "check --help names --matrix" 0 "ffnrt check --matrix" "" "$ffnrt" check --help
check "check --matrix --op nosuchop: named, exit 2" 2 "" 'unknown --op value "nosuchop"' "$ffnrt" check --matrix --op nosuchop
check "check --matrix --weights q9_9 refused" 2 "" 'unknown --weights value "q9_9"' "$ffnrt" check --matrix --weights q9_9
check "check --matrix --bound-scale abc refused" 2 "" "--bound-scale abc" "$ffnrt" check --matrix --bound-scale abc
check "check --matrix --frob refused" 2 "" "unknown option --frob" "$ffnrt" check --matrix --frob

# ffnrt run: every number whole (strtof without an end check made "abc" 0).
check "run gelu abc" 2 "" '"abc" is not a number' "$ffnrt" run gelu abc
check "run gelu 1.5x" 2 "" '"1.5x" is not a number' "$ffnrt" run gelu 1 1.5x
check "run gelu with an empty argument" 2 "" 'is not a number' "$ffnrt" run gelu ""
check "run gelu 1e50 (past float)" 2 "" '"1e50" is not a number' "$ffnrt" run gelu 1e50
check "run nosuchop (read an uninitialised kind)" 2 "" '"nosuchop" is not an activation' "$ffnrt" run nosuchop 1
check "run prelu" 2 "" "prelu needs a slope tensor" "$ffnrt" run prelu 1
check "run --help on stdout" 0 "usage: ffnrt run" "" "$ffnrt" run --help
check "check --help on stdout (the top usage names it)" 0 "usage: ffnrt check" "" "$ffnrt" check --help
check "check --quant --help on stdout" 0 "usage: ffnrt check --quant" "" "$ffnrt" check --quant --help
check "run geglu 1 (not a pair)" 2 "" '"1" is not a number pair' "$ffnrt" run geglu 1
check "run gelu 1:2 (a pair for an activation)" 2 "" '"1:2" is not a number' "$ffnrt" run gelu 1:2
check "run --bins 257 (past the most)" 2 "" "bad option --bins 257" "$ffnrt" run --bins 257 gelu 1
check "run --range 4,-x" 2 "" "bad option --range" "$ffnrt" run --range 4,-x gelu 1
check "run --dtype f8" 2 "" "bad option --dtype f8" "$ffnrt" run --dtype f8 gelu 1
check "check --fp32-control geglu abc" 2 "" '"abc" is not a number pair' "$ffnrt" check --fp32-control geglu abc

# ffnrt plan: --d abc silently planned 4096; 2^63 - 1 overflowed 4 d.
check "plan --d abc" 2 "" "--d abc: not an integer" "$ffnrt" plan --op swiglu --d abc
check "plan --d 9223372036854775807" 2 "" "not an integer in \[1, 4294967295\]" "$ffnrt" plan --op swiglu --d 9223372036854775807
check "plan --d 99999999999999999999 (past int64)" 2 "" "not an integer" "$ffnrt" plan --op swiglu --d 99999999999999999999
check "plan --elements -1" 2 "" "--elements -1: not an integer" "$ffnrt" plan --op gelu --elements -1
check "plan --tokens 8x" 2 "" "--tokens 8x" "$ffnrt" plan --op swiglu --tokens 8x
check "plan --hidden ' 7' (a blank)" 2 "" "--hidden  7" "$ffnrt" plan --op swiglu --hidden " 7"
check "plan --width 0" 2 "" "--width 0" "$ffnrt" plan --op geglu --glu-only --width 0
check "plan --channels 0" 2 "" "--channels 0" "$ffnrt" plan --op prelu --channels 0
check "plan --d with no value" 2 "" "--d needs a value" "$ffnrt" plan --op swiglu --d
check "plan --bogus" 2 "" "unknown option" "$ffnrt" plan --bogus

# ffnrt bench: sizes and counts whole, in range, never wrapped.
check "bench --size 17592186044417M (wrapped to 1M)" 2 "" "--size 17592186044417M" "$ffnrt" bench --size 17592186044417M
check "bench --size 18446744073709551616 (past uint64)" 2 "" "--size" "$ffnrt" bench --size 18446744073709551616
check "bench --size 5G (past a tensor)" 2 "" "--size 5G" "$ffnrt" bench --size 5G
check "bench --size -1M" 2 "" "--size -1M" "$ffnrt" bench --size -1M
check "bench --size 1000 (not a multiple of 1024)" 2 "" "--size 1000" "$ffnrt" bench --size 1000
check "bench --tokens 8x" 2 "" "--tokens 8x" "$ffnrt" bench --tokens 1,8x
check "bench --repeats 0" 2 "" "--repeats 0" "$ffnrt" bench --repeats 0
check "bench --min-runs abc" 2 "" "--min-runs abc" "$ffnrt" bench --min-runs abc
check "bench --budget inf" 2 "" "--budget inf" "$ffnrt" bench --budget inf
check "bench --budget -1" 2 "" "--budget -1" "$ffnrt" bench --budget -1

# "--" ends the options in every command (POSIX; src/lab/args.h): the first
# "--" that is not an option's value is dropped wherever it stands, and all
# after it are operands, so negative numbers and names starting with '-'
# can follow. FFNRT_DEVICE=nosuch stops a run that parsed at the device
# choice (exit 1, "no device matches"), so no kernel is built here.
parsed() { # description, command... (parsed whole: it reached the device choice)
    local what=$1
    shift
    check "$what" 1 "" "no device matches" env FFNRT_DEVICE=nosuch "$@"
}
parsed "run --stats relu -- -2 -1 0 (was: \"--\" is not a number)" "$ffnrt" run --stats relu -- -2 -1 0
parsed "run -- relu -2" "$ffnrt" run -- relu -2
parsed "run relu -2 (a number after OP, no -- needed)" "$ffnrt" run relu -2
check "run relu -- -2 abc: -- dropped, the numbers read" 2 "" '"abc" is not a number' "$ffnrt" run relu -- -2 abc
check "run -- -2 1: after --, -2 is the OP" 2 "" '"-2" is not an activation' "$ffnrt" run -- -2 1
check "run relu -2 -- -- 1: only the first -- is dropped" 2 "" '"--" is not a number' "$ffnrt" run relu -2 -- -- 1
check "run --bins --: an option's value is taken whole" 2 "" "bad option --bins --" "$ffnrt" run --bins -- relu 1
check "run -h" 0 "usage: ffnrt run" "" "$ffnrt" run -h
check "run --device nosuch: refused at the device choice, as spelled, with what was found" 1 "" \
    'no device matches "nosuch", asked by options.device; \(found: \|no device found\)' "$ffnrt" run --device nosuch relu 1
check "run --device without its value" 2 "" "bad option --device (its value is missing)" "$ffnrt" run --device
parsed "check --dtype f16 -- gelu" "$ffnrt" check --dtype f16 -- gelu
parsed "check gelu -- (options may come after OP)" "$ffnrt" check gelu --dtype f16 --
parsed "check --fp32-control geglu -- -1:2" "$ffnrt" check --fp32-control geglu -- -1:2
check "check -- gelu --dtype: after --, an operand" 2 "" "usage: ffnrt check" "$ffnrt" check -- gelu --dtype
check "check --quant -- x" 2 "" "unexpected argument x" "$ffnrt" check --quant -- x
check "check --quant --gguf -x.gguf: a value starting with -" 1 "" "-x.gguf: No such file" \
    "$ffnrt" check --quant --gguf -x.gguf
printf 'root:x:0:0' >"$dir/not.gguf"
check "check --quant --gguf on a file that is not GGUF: named once, with what it starts with" 1 "" \
    "^ffnrt check --quant: $dir/not.gguf: GGUF: not a GGUF file (it starts with 72 6f 6f 74)\$" \
    "$ffnrt" check --quant --gguf "$dir/not.gguf"
parsed "plan --op gelu --" "$ffnrt" plan --op gelu --
check "plan -- --op gelu" 2 "" "unexpected argument --op" "$ffnrt" plan -- --op gelu
check "devices --profiles --" 0 "vulkan-minimum" "" "$ffnrt" devices --profiles --
check "devices -- --profiles" 2 "" "unexpected argument --profiles" "$ffnrt" devices -- --profiles
check "devices --no-calibration --bogus" 2 "" "unexpected argument --bogus" "$ffnrt" devices --no-calibration --bogus
check "devices --help names --no-calibration" 0 "--no-calibration" "" "$ffnrt" devices --help
check "bench -- x" 2 "" "unexpected argument x" "$ffnrt" bench -- x
check "bench --compare -- -a.json b.json: -a.json is a file" 2 "" "-a.json: cannot open" \
    "$ffnrt" bench --compare -- -a.json b.json
check "bench --plot -- -r.json" 2 "" "-r.json: cannot open" "$ffnrt" bench --plot -- -r.json
check "compare --d 6 --m 12 -- x" 2 "" "unexpected argument x" "$ffnrt" compare --d 6 --m 12 -- x
check "compare --compare -- -a.json b.json" 2 "" "-a.json: cannot open" "$ffnrt" compare --compare -- -a.json b.json
check "compare --compare --threshold --: the value" 2 "" "--threshold --: a finite number" \
    "$ffnrt" compare --compare --threshold -- a b
check "compare --plot -- -r.json" 2 "" "-r.json: cannot open" "$ffnrt" compare --plot -- -r.json
check "compare --plot -- --min-tokens-per-s: a file, not criteria" 2 "" "--min-tokens-per-s: cannot open" \
    "$ffnrt" compare --plot -- --min-tokens-per-s

# ffnrt check --quant --gguf: what is not a regular file is refused at
# once (a FIFO used to wait for a writer for ever: timeout makes that a 124).
mkfifo "$dir/f.gguf"
check "check --quant --gguf FIFO" 1 "" "f.gguf is a FIFO (named pipe), not a regular file" \
    timeout 60 "$ffnrt" check --quant --gguf "$dir/f.gguf" --layer 0
check "check --quant --gguf DIRECTORY" 1 "" "is a directory, not a regular file" \
    timeout 60 "$ffnrt" check --quant --gguf "$dir" --layer 0

# GGUF files written here, byte by byte (little-endian, as GGUF).
le() { # value bytes: the value's low bytes, little-endian
    local v=$1 n=$2 i
    for ((i = 0; i < n; i++)); do printf "\\x$(printf %02x $(((v >> (8 * i)) & 255)))"; done
}
gguf_string() { le ${#1} 8; printf '%s' "$1"; }
# A one-layer dense gpt2 file: blk.0.ffn_up.weight ne {D, H} and
# ffn_down ne {H, D}, both F32 (empty when D or H is 0), no data.
gguf_dense_layer() { # path D H
    {
        printf GGUF; le 3 4; le 2 8; le 1 8
        gguf_string general.architecture; le 8 4; gguf_string gpt2
        gguf_string blk.0.ffn_up.weight; le 2 4; le "$2" 8; le "$3" 8; le 0 4; le 0 8
        gguf_string blk.0.ffn_down.weight; le 2 4; le "$3" 8; le "$2" 8; le 0 4; le 0 8
    } >"$1"
    local size
    size=$(stat -c %s "$1")
    head -c $(((32 - size % 32) % 32)) /dev/zero >>"$1" # the data section starts aligned
}

# Sizes no layer can have are refused with a message naming the tensor and
# the size, never a silent exit 1 (a 4 TiB allocation used to fail unsaid).
gguf_dense_layer "$dir/d0.gguf" 0 $((1 << 40))
gguf_dense_layer "$dir/h0.gguf" $((1 << 40)) 0
check "check --quant: d_model 0, hidden 2^40" 1 "" "blk.0.ffn_up.weight has d_model (ne\[0\]) 0; an ffnrt layer" \
    "$ffnrt" check --quant --gguf "$dir/d0.gguf"
check "check --quant: d_model 2^40, hidden 0" 1 "" "blk.0.ffn_up.weight has d_model (ne\[0\]) 1099511627776" \
    "$ffnrt" check --quant --gguf "$dir/h0.gguf"
if [ -n "$example_gguf" ]; then
    check "example_gguf_ffn: d_model 0" 1 "" "has d_model (ne\[0\]) 0;" "$example_gguf" "$dir/d0.gguf"
    check "example_gguf_ffn: d_model 2^40" 1 "" "has d_model (ne\[0\]) 1099511627776;" "$example_gguf" "$dir/h0.gguf"
    check "example_gguf_ffn: LAYER abc" 2 "" "LAYER abc" "$example_gguf" "$dir/d0.gguf" abc
fi
# An allocation that fails says so (here the 16 GiB of a 65536 x 65536
# layer's fp32 weights under a 2 GB address-space limit). Not under a
# sanitizer, whose shadow memory needs more address space than that.
if ! ldd "$ffnrt" 2>/dev/null | grep -q 'libasan\|libtsan'; then
    check "check --quant: out of memory is said" 1 "" "no memory for W_in or W_gate (4294967296 x 4 bytes)" \
        sh -c 'ulimit -v 2000000 && exec "$0" check --quant --d 65536 --hidden 65536' "$ffnrt"
fi

exit $fail
