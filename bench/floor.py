"""The floor under `triage analyze`: what any run of it costs before the first line is looked at.

    python bench/floor.py PATH...

Does what every analysis must, with triage's own code, and nothing per line: start the
interpreter, import the CLI and the library, load the rules (from the cache, as a second run
does), walk the paths, open and read every file, decode it, find the candidate lines with the
hyperscan pass and count the lines. No line is peeled, no rule regex runs, no event is made, no job
is built, no report written. `bench.py` times it beside grep and triage in the same run: triage's
CPU above this floor is the per-line, per-source and per-job work in Python; this floor's ratio to
grep is the least any triage in Python could reach, whatever that work cost.

Prints the number of files, candidate lines and lines, so the work cannot be optimised away.
"""

from __future__ import annotations

import sys

import triage.cli  # noqa: F401  # what `triage analyze` imports before it reads anything
from triage.api import Matcher, iter_files, load_rules, open_file
from triage.ingest.open import Unreadable, read_chunks
from triage.parse.scan import ScanStats, decode_chunks


def main(paths: list[str]) -> int:
    matcher = Matcher(load_rules(()))
    files = candidates = lines = 0
    for item in iter_files(paths):
        if isinstance(item, Unreadable):
            continue
        for stream in open_file(item):
            if isinstance(stream, Unreadable):
                continue
            files += 1
            for text in decode_chunks(read_chunks(stream), ScanStats()):
                candidates += len(matcher.finder.line_starts(text, len(text)))
                lines += text.count("\n")
    print(f"{files} files, {candidates} candidate lines, {lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
