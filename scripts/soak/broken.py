"""A deliberately broken idmint, to show that the soak catches what it
claims (`soak.py --broken MODE`): it wraps the real binary and breaks one
promise the way a bug would.

- duplicate: one `idmint seq` of the autoinc counter in five prints its
  first value again at the end, as a kind whose guard let a value out twice;
- lock: `idmint lock run` starts COMMAND in a session of its own that
  outlives it (`setsid --fork`), so the lock is released while COMMAND runs
  on, as a lock run that ignored its lease would.

Everything else runs the real binary, SOAK_REAL_IDMINT.
"""

import os
import random
import subprocess
import sys


def main():
    real = os.environ["SOAK_REAL_IDMINT"]
    mode = os.environ["SOAK_BROKEN"]
    args = sys.argv[1:]
    if mode == "duplicate" and args[:1] == ["seq"] and "soak-autoinc" in args:
        result = subprocess.run([real, *args], stdout=subprocess.PIPE)
        lines = result.stdout.decode().splitlines()
        if result.returncode == 0 and lines and random.random() < 0.2:
            lines.append(lines[0])
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.exit(result.returncode)
    if mode == "lock" and args[:2] == ["lock", "run"] and "--" in args:
        split = args.index("--")
        args = args[:split + 1] + ["setsid", "--fork"] + args[split + 1:]
    os.execv(real, [real, *args])


if __name__ == "__main__":
    main()
