#!/bin/sh
# The library's floors: prints the folder-level include graph of src/ (and,
# given a build directory, the folder-level call graph read from the
# library's object files with nm), and fails when either has a loop.
#
#   tools/floors.sh [BUILD_DIR]
#
# A folder is a file's directory under src/ (backend/vulkan and
# backend/vulkan/interop are two folders); include/ and shaders/ are the
# ground. An edge A -> B means a file in A includes a file of B (or an
# object of A refers to a symbol defined in B). tsort finds the loops.
# Exit status: 0 no loop, 1 a loop (named on stderr), 2 usage.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ------------------------------------------------------------ includes
cd "$root"
for f in $(git ls-files 'src/*.c' 'src/*.h' 'src/*.inc' 2>/dev/null || find src -name '*.[ch]' -o -name '*.inc'); do
    from=$(dirname "${f#src/}")
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
        if [ -e "$(dirname "$f")/$inc" ]; then
            target=$(cd "$(dirname "$f")/$(dirname "$inc")" && pwd)
        elif [ -e "src/$inc" ]; then
            target=$root/src/$(dirname "$inc")
        elif [ -e "include/$inc" ]; then
            target=$root/include
        elif [ -e "bench/$inc" ]; then
            target=$root/bench # the CLI's bench harness
        elif [ -e "tools/reference/$inc" ]; then
            target=$root/tools/reference # the double reference ffnrt check uses
        else
            target=$root/external # generated or third-party
        fi
        case $target in
        "$root"/src/*) to=${target#"$root"/src/} ;;
        "$root"/src) to=. ;;
        "$root"/tools/*) to=${target#"$root"/} ;;
        *) to=$(basename "$target") ;;
        esac
        if [ "$from" != "$to" ]; then echo "$from $to"; fi
    done
done | sort -u > "$tmp/includes"

echo "folder include graph (A -> B: A includes B):"
awk '{ printf "  %-24s -> %s\n", $1, $2 }' "$tmp/includes"
status=0
if ! tsort "$tmp/includes" > /dev/null 2> "$tmp/loop"; then
    echo "LOOP in the include graph:" >&2
    cat "$tmp/loop" >&2
    status=1
fi

# --------------------------------------------------------------- calls
if [ -n "$build" ]; then
    objdir="$build/CMakeFiles/ffnrt_objects.dir/src"
    [ -d "$objdir" ] || { echo "floors.sh: no objects in $objdir (build first)" >&2; exit 2; }
    for o in $(find "$objdir" -name '*.o'); do
        rel=${o#"$objdir"/}
        [ -e "$root/src/${rel%.o}" ] || continue # an object left from a source since moved
        folder=$(dirname "$rel")
        nm --defined-only -g "$o" | awk -v f="$folder" 'NF == 3 { print "D", $3, f }'
        nm -u "$o" | awk -v f="$folder" '{ print "U", $NF, f }'
    done > "$tmp/symbols"
    awk '$1 == "D" { def[$2] = $3 } $1 == "U" { use[++n] = $2 " " $3 }
         END { for (i = 1; i <= n; i++) { split(use[i], u, " "); if ((u[1] in def) && def[u[1]] != u[2]) print u[2], def[u[1]], u[1] } }' \
        "$tmp/symbols" | sort -u > "$tmp/edges"
    cut -d' ' -f1,2 "$tmp/edges" | sort -u > "$tmp/calls"
    echo "folder call graph (A -> B: code in A calls or reads a symbol of B):"
    if [ -n "${FLOORS_SYMBOLS:-}" ]; then # FLOORS_SYMBOLS=1: name the symbols of each edge
        awk '{ printf "  %-24s -> %-16s %s\n", $1, $2, $3 }' "$tmp/edges"
    else
        awk '{ printf "  %-24s -> %s\n", $1, $2 }' "$tmp/calls"
    fi
    if ! tsort "$tmp/calls" > /dev/null 2> "$tmp/loop"; then
        echo "LOOP in the call graph:" >&2
        cat "$tmp/loop" >&2
        status=1
    fi
fi
[ $status -eq 0 ] && echo "no loop"
exit $status
