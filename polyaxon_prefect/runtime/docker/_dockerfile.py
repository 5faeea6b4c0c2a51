"""The Dockerfile Polyaxon generates from a ``dockerfile`` value.

Pure text generation, apart from the init step that writes it, so a future image builder or
manifest backend renders exactly the Dockerfile a local run writes.
"""

from __future__ import annotations

import json
from typing import Any

from polyaxon_prefect.runtime._paths import pairs

__all__ = ["render_dockerfile"]


def render_dockerfile(spec: Any) -> str:
    """The Dockerfile text Polyaxon generates from a ``dockerfile`` type value.

    Same statements in the same order as Polyaxon's template: FROM, language env, SHELL, PATH
    additions, ENV, WORKDIR, COPY, RUN, post-run COPY, the uid/gid user, and the workdir copy.
    A ``copy`` item that is a plain path is copied into the workdir.
    """
    workdir = spec.workdir or "/code"
    shell = spec.shell or "/bin/bash"
    lines = [f"FROM {spec.image}", ""]
    if spec.lang_env:
        lines += [
            f"ENV LC_ALL {spec.lang_env}",
            f"ENV LANG {spec.lang_env}",
            f"ENV LANGUAGE {spec.lang_env}",
            "",
        ]
    lines += [f"ENV SHELL {shell}", ""]
    for path in spec.path or []:
        lines.append(f'ENV PATH="${{PATH}}:{path}"')
    if spec.path:
        lines.append("")
    for key, value in (spec.env or {}).items():
        lines.append(f"ENV {key} {value if isinstance(value, str) else json.dumps(value)}")
    if spec.env:
        lines.append("")
    lines += [f"WORKDIR {workdir}", ""]
    for src, dst in pairs(spec.copy_):
        lines.append(f"COPY {src} {dst or workdir}")
    if spec.copy_:
        lines.append("")
    for command in spec.run or []:
        lines.append(f"RUN {command}")
    if spec.run:
        lines.append("")
    for src, dst in pairs(spec.post_run_copy):
        lines.append(f"COPY {src} {dst or workdir}")
    if spec.post_run_copy:
        lines.append("")
    if spec.uid and spec.gid:
        lines += [
            "# Drop root user and use Polyaxon user",
            f"RUN groupadd -g {spec.gid} -r polyaxon && useradd -r -m -g polyaxon "
            f"-u {spec.uid} {spec.username or 'polyaxon'}",
            "",
        ]
    if spec.workdir_path:
        lines += [f"COPY {spec.workdir_path} {workdir}", ""]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"
