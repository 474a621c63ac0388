#!/usr/bin/env bash
# ffnrt's training step against PyTorch's (tests/peer_torch.py: a SwiGLU and
# a dense GELU layer, a few AdamW steps, float64 PyTorch as the reference),
# registered only where CMake found a python3 that imports torch, as
# peer_ggml is only where the ggml peer was built. Should torch be gone at
# run time, the test fails, unless FFNRT_TEST_ALLOW_MISSING=1 (then it
# skips: exit 77).
# Usage: peer_torch.sh PYTHON path/to/torch_train_step
set -u
python=${1:?usage: peer_torch.sh PYTHON path/to/torch_train_step}
exe=${2:?usage: peer_torch.sh PYTHON path/to/torch_train_step}
here=$(cd "$(dirname "$0")" && pwd)
if ! why=$("$python" -c 'import torch, numpy' 2>&1); then
    echo "no torch in $python: ${why##*$'\n'}"
    [ "${FFNRT_TEST_ALLOW_MISSING:-}" = 1 ] && { echo "skip: allowed by FFNRT_TEST_ALLOW_MISSING"; exit 77; }
    echo "FAIL: apt-get install python3-torch (scripts/install-deps peers), or FFNRT_TEST_ALLOW_MISSING=1"
    exit 1
fi
exec "$python" "$here/peer_torch.py" "$exe"
