# Runs a Pulumi Python program for the tuskr minimal host (python.go passes it with `python -c`):
# the engine's settings to the pulumi SDK, then the program as __main__, inside the SDK's stack.
# Exit codes: 0 done; 1 an error the SDK reported; 32 an error already shown to the user, or the
# engine's own stop (it reports why).
import argparse
import asyncio
import logging
import os
import runpy
import signal
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor

try:
    import pulumi
    import pulumi.runtime
except ImportError:
    print(traceback.format_exc(), file=sys.stderr)
    print(
        "The pulumi package is not installed in this Python environment. "
        "Install the program's requirements: python -m pip install -r requirements.txt",
        file=sys.stderr,
    )
    sys.exit(1)

SHOWN = 32


def on_cancel(signum, frame):
    """The engine is done with the program (a failed step, or Ctrl-C in the CLI): it has said why.
    Stop at once, as a Go program does, rather than raise KeyboardInterrupt wherever the program is."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(SHOWN)


# Installed before anything talks to the engine: its cancel (the host's SIGINT) can come at any time.
signal.signal(signal.SIGINT, on_cancel)


def monitor_gone(e: BaseException) -> bool:
    """Whether an error comes from the engine's resource monitor having shut down (gRPC UNAVAILABLE),
    which the engine does after a failed step it has already reported."""
    import grpc

    seen = set()
    cur = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, grpc.RpcError) and callable(getattr(cur, "code", None)) and cur.code() == grpc.StatusCode.UNAVAILABLE:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


parser = argparse.ArgumentParser(prog="pulumi-language-python (tuskr minimal host)")
for name in ("monitor", "engine", "project", "root_directory", "stack", "pwd", "dry_run", "parallel", "organization"):
    parser.add_argument("--" + name)
parser.add_argument("program")
parser.add_argument("args", nargs="*")
opts = parser.parse_args()

pulumi.runtime.set_all_config(pulumi.runtime.get_config_env(), pulumi.runtime.get_config_secret_keys_env())
settings = pulumi.runtime.Settings(
    monitor=opts.monitor,
    engine=opts.engine,
    project=opts.project,
    stack=opts.stack,
    parallel=int(opts.parallel or 0),
    dry_run=opts.dry_run == "true",
    organization=opts.organization,
    root_directory=opts.root_directory,
)
pulumi.runtime.configure(settings)

sys.argv = [opts.program, *opts.args]
if opts.pwd:
    os.chdir(opts.pwd)

loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)
executor = ThreadPoolExecutor(max_workers=max(int(opts.parallel or 1), 1) * 4)
loop.set_default_executor(executor)
# Outputs left unresolved when a program fails are expected: asyncio's warnings about them are noise.
logging.getLogger("asyncio").setLevel(logging.CRITICAL)

code = 1
try:
    loop.run_until_complete(pulumi.runtime.run_in_stack(lambda: runpy.run_path(opts.program, run_name="__main__")))
    code = 0
except pulumi.RunError as e:
    if monitor_gone(e):  # the engine stopped after a failure it has reported: nothing to add
        code = SHOWN
    else:
        pulumi.log.error(str(e))
except Exception:  # the program's own failure: shown to the user, with its traceback
    pulumi.log.error("Program failed with an unhandled exception:\n" + traceback.format_exc())
    code = SHOWN
finally:
    executor.shutdown(wait=True)
    loop.close()
    sys.stdout.flush()
    sys.stderr.flush()
sys.exit(code)
