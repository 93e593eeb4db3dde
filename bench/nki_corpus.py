"""Which NKI kernels of a corpus the NKI front end imports unchanged (docs/nki.md).

    python bench/nki_corpus.py DIR [--json]
    python bench/nki_corpus.py GIT_DIR --rev REV [--under PATH] [--verify] [--json]

DIR: a directory of Python files (searched recursively). GIT_DIR: a git repository (a
bare mirror works), read at REV with `git ls-tree` / `git show`, nothing checked out;
--under keeps the files below PATH. Every function decorated by NKI (`@nki.jit`,
`@nki.baremetal`, ...) is imported by name (semantics.nki.import_source) and reported
as `imported` (with its op count) or `refused` with the error, `FILE:LINE:COL: error:
...`. The summary gives the share imported and counts the refusals by their message
(the construct that stopped them). --verify also syncs each imported kernel with the
threshold strategy and verifies it within small bounds (every parameter at most 1, a
time limit of 60 s per kernel): its verdict is added to the row. Nothing of the corpus
is copied anywhere.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from semantics.errors import KernelError, SyncproofError  # noqa: E402
from semantics.ir import ops  # noqa: E402
from semantics.nki import import_source, kernel_names  # noqa: E402


def files_of_dir(root: Path, under: str | None):
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if under is None or rel.startswith(under):
            yield rel, path.read_text(encoding="utf-8", errors="replace")


def files_of_git(repo: Path, rev: str, under: str | None):
    def git(*args) -> str:
        return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True,
                              check=True).stdout

    for rel in git("ls-tree", "-r", "--name-only", rev).splitlines():
        if rel.endswith(".py") and (under is None or rel.startswith(under)):
            yield rel, git("show", f"{rev}:{rel}")


def verdict(program) -> str:
    import syncproof

    options = syncproof.VerifyOptions(scope=syncproof.Scope.BOUNDED, max_param=1, timeout=60.0)
    try:
        return syncproof.verify(program, options).verdict.value
    except SyncproofError as err:
        return f"error: {err}"


def survey(files, check: bool = False) -> list[dict]:
    rows = []
    for rel, text in files:
        if "nki" not in text:
            continue
        try:
            names = kernel_names(text, rel)
        except KernelError as err:
            rows.append({"file": rel, "kernel": None, "status": "refused", "error": err.render()})
            continue
        for name in names:
            try:
                imported = import_source(text, rel, name)
            except SyncproofError as err:
                message = err.render() if isinstance(err, KernelError) else f"{rel}: error: {err}"
                rows.append({"file": rel, "kernel": name, "status": "refused", "error": message})
            else:
                rows.append({"file": rel, "kernel": name, "status": "imported",
                             "ops": len(ops(imported.program)), "params": len(imported.program.params)})
                if check:
                    rows[-1]["verdict"] = verdict(imported.program)
    return rows


def reason(error: str) -> str:
    """The message without its position (what the refusals are counted by)."""
    text = re.sub(r"^.*?:\d+:\d+: error: ", "", error)
    return re.sub(r"'[^']*' (allocated in a loop)", r"'...' \1", text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a directory of .py files, or a git repository with --rev")
    parser.add_argument("--rev", help="read the git repository CORPUS at this revision")
    parser.add_argument("--under", help="only files below this path (relative to the corpus)")
    parser.add_argument("--verify", action="store_true",
                        help="sync (threshold) and verify each imported kernel within small bounds")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    files = files_of_git(args.corpus, args.rev, args.under) if args.rev else files_of_dir(args.corpus, args.under)
    rows = survey(files, args.verify)
    kernels = [r for r in rows if r["kernel"] is not None]
    imported = [r for r in kernels if r["status"] == "imported"]
    reasons = collections.Counter(reason(r["error"]) for r in rows if r["status"] == "refused")
    if args.json:
        print(json.dumps({"rows": rows, "kernels": len(kernels), "imported": len(imported),
                          "refusals": dict(reasons.most_common())}, indent=2))
        return 0
    for r in rows:
        where = f"{r['file']}:{r['kernel']}" if r["kernel"] else r["file"]
        detail = f"{r['ops']} ops, {r['params']} params" if r["status"] == "imported" else r["error"]
        if "verdict" in r:
            detail += f", verify: {r['verdict']}"
        print(f"{r['status']:<9} {where}  {detail}")
    share = 100.0 * len(imported) / len(kernels) if kernels else 0.0
    print(f"\n{len(imported)} of {len(kernels)} kernel functions imported unchanged ({share:.0f} %)")
    if args.verify:
        verdicts = collections.Counter(r["verdict"] for r in imported)
        print("verify (threshold, bounded, parameters <= 1): " +
              ", ".join(f"{n} {text}" for text, n in verdicts.most_common()))
    for text, count in reasons.most_common():
        print(f"  {count:>3}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
