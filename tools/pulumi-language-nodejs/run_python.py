# Runs a Pulumi Python program for the tuskr minimal host (python.go passes it with `python -c`):
# the engine's settings to the pulumi SDK, then the program as __main__, inside the SDK's stack.
# Exit codes: 0 done; 1 an error the SDK reported; 32 an error already shown to the user.
import argparse
import asyncio
import logging
import os
import runpy
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
