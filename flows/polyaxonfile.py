"""Deployable entrypoint for any Polyaxonfile: ``flows/polyaxonfile.py:flow``.

Thin on purpose: the Polyaxonfile is the source of truth. ``polyaxon-prefect deploy -f FILE
--pool POOL`` deploys the same flow by its module path (so a worker finds it from any
directory), with the component's inputs as a typed, documented form and the file in the
deployment's job variables (``env: {POLYAXON_PREFECT_FILE: path-or-URL}``): when a worker's
process imports this module with that variable set, ``flow`` is that file's typed flow. From a
``prefect.yaml``, set the variable in the deployment's ``job_variables`` for the same typed
form, or leave it out and pass the ``polyaxonfile`` (path or URL) and ``params`` parameters.
"""

from polyaxon_prefect.prefect.deployments._deploy import deployed_flow

flow = deployed_flow()

__all__ = ["flow"]
