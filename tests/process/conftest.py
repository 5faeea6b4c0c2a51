"""tests/process: tests of the package's units that are too slow or too heavy for tests/unit.

Each spawns a child process, starts a server, talks to an emulated Kubernetes API server, or
takes seconds, and says which with a marker (`process`, `server`, `cluster`, `slow`; see
pyproject.toml): tests/conftest.py refuses one that carries none. The folders mirror the
package's (and tests/unit's); `make test-fast` leaves this folder out, `make test` runs it.
"""
