"""The binary's own identity: `warmroute --version` names the version and the commit it was built
from, which is what a bug report needs."""
import os
import re
import subprocess
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ["WARMROUTE_BIN"]


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)


class VersionTest(unittest.TestCase):
    def test_version_names_the_release_and_the_commit_built(self):
        run = subprocess.run([BIN, "--version"], capture_output=True, text=True, timeout=10)
        self.assertEqual(run.returncode, 0, run.stderr)
        match = re.fullmatch(r"warmroute (\d+\.\d+\.\d+) \(commit ([0-9a-f]{12}(?:-dirty)?|unknown)\)\n",
                             run.stdout)
        self.assertIsNotNone(match, run.stdout)
        head = git("rev-parse", "--short=12", "HEAD")
        if head.returncode != 0:
            self.assertEqual(match.group(2), "unknown")
            return
        # make test builds before it tests: the binary is of the checked-out commit.
        self.assertEqual(match.group(2).removesuffix("-dirty"), head.stdout.strip())
        changed = git("status", "--porcelain", "--untracked-files=no").stdout.strip() != ""
        if not changed:
            self.assertFalse(match.group(2).endswith("-dirty"), run.stdout)

    def test_version_needs_no_subcommand_and_a_bad_command_line_exits_2(self):
        run = subprocess.run([BIN, "--no-such-flag"], capture_output=True, text=True, timeout=10)
        self.assertEqual(run.returncode, 2)


if __name__ == "__main__":
    unittest.main()
