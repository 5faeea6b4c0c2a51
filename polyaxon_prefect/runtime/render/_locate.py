"""Lines for the problems found while preparing a job.

The loader's positions are not kept on `LoadedPolyaxonfile`, and its regions relocate a path
into the file a component came from; here the path stays relative to the operation. So the
main file is parsed again, only when there is a problem to locate.
"""

from __future__ import annotations

from pathlib import Path

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.runtime.render._problem_collector import PathT

__all__ = ["locate_problems"]


def locate_problems(problems: list[Problem], loaded: object) -> list[Problem]:
    """Best effort: put the main file's line on ``component.*`` problems.

    The path stays relative to the operation (``component.run.container.args[2]``), which is
    what the problem is about whichever file the component came from; the line is only found
    when the component is written in the main file.
    """
    files = getattr(loaded, "files", ()) or ()
    if not files:
        return problems
    try:
        from polyaxon_prefect.loading import parse_yaml

        doc = parse_yaml(Path(files[0]).read_text(encoding="utf-8"), file=str(files[0]))
    except (OSError, PolyaxonfileError, UnicodeDecodeError):
        return problems
    data = doc.data if isinstance(doc.data, dict) else {}
    located: list[Problem] = []
    for problem in problems:
        path = problem.path
        if data.get("kind") == "component" and path[:1] == ("component",):
            source_path: PathT | None = path[1:]
        elif data.get("kind") == "operation" and (
            path[:1] != ("component",) or isinstance(data.get("component"), dict)
        ):
            source_path = path
        else:
            source_path = None
        if source_path is None:
            located.append(problem)
            continue
        line, column = doc.positions.find(source_path)
        located.append(problem.located(file=str(files[0]), line=line, column=column))
    return located
