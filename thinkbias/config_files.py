"""The config files a run is given, read with the project's YAML reader before anything is planned.

Snakemake reads ``--configfile`` files itself and merges them into ``config``: a key given twice
keeps its last value without a word (a second ``position:`` section drops the first's runs). The
Snakefile reads each file again here, so a duplicate key stops the run naming the file, the line and
the key. A file Snakemake cannot read at all (a tab in the indentation, an empty file) stops Snakemake
before the Snakefile runs, with a message that names no file; ``tb.py run`` checks its
``--configfile`` arguments with this module first (``python -m thinkbias.config_files
[snakemake arguments...]``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, Sequence

from thinkbias.config import config_error
from thinkbias.yamlfile import YamlFileError, read_mapping

CONFIGFILE_OPTIONS = ("--configfile", "--configfiles")


def config_file_errors(paths: Iterable[str | Path]) -> list[str]:
    """One line per config file that is missing or not a readable YAML mapping with unique keys."""
    errors = []
    for path in paths:
        if not Path(path).is_file():
            errors.append(f"{path}: no such config file (from {Path.cwd()})")
            continue
        try:
            read_mapping(path, "config file")
        except YamlFileError as err:
            errors.append(str(err))
    return errors


def check_config_files(paths: Iterable[str | Path]) -> None:
    """Raise ``ConfigError`` listing every error of ``config_file_errors``."""
    errors = config_file_errors(paths)
    if errors:
        raise config_error(errors)


def configfile_arguments(args: Sequence[str]) -> list[str]:
    """The files named by ``--configfile`` / ``--configfiles`` in Snakemake command-line ``args``
    (each option takes the arguments up to the next option; ``--configfile=FILE`` too)."""
    files, taking = [], False
    for arg in args:
        option, eq, value = arg.partition("=")
        if option in CONFIGFILE_OPTIONS:
            taking = not eq
            files += [value] if eq else []
        elif arg.startswith("-"):
            taking = False
        elif taking:
            files.append(arg)
    return files


def main(argv: Sequence[str]) -> int:
    """Check the config files that Snakemake command-line arguments ``argv`` name; print the errors
    and return 1 when there are any."""
    errors = config_file_errors(configfile_arguments(argv))
    for line in errors:
        print(f"invalid config file: {line}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
