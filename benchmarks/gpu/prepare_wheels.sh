#!/usr/bin/env bash
# The wheels benchmarks/gpu/check.py needs on the GPU machine beyond what its image holds (torch, transformers,
# peft, accelerate, tokenizers, safetensors, numpy, pyarrow, pandas ... are there): pure-Python wheels for
# Python 3.12, into .whl/ at the repo root (ignored through .git/info/exclude, carried with `carry: [".whl"]`).
# Versions are the ones this checkout is tested with. Needs pip and the network (here, not there).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx "/.whl/" "$exclude" 2>/dev/null || echo "/.whl/" >> "$exclude"
rm -rf .whl && mkdir .whl
packages=(
  gymnasium==1.4.0 farama-notifications==0.0.6 minigrid==3.2.0   # BabyAI-Text (BK's env)
  pygame-ce==2.5.8                                              # minigrid imports it (a manylinux wheel)
  stable-baselines3==2.9.2                                      # BK's PPO
  trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19  # LLM-Personalize's SFT
  platformdirs==4.14.8                                          # textenvs' data folder
)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d .whl "${packages[@]}"
du -sh .whl
